package web

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"time"

	"github.com/podium-sfu/podium/internal/signal"
)

// Bridge is one other node's answer for a room's participants.
type Bridge struct {
	Node   string `json:"node"`
	Region string `json:"region,omitempty"`
	// Participants as that node's admin API shows them; Error when it did not answer.
	Participants []json.RawMessage `json:"-"`
	Error        string            `json:"error,omitempty"`
}

// bridgeSummary is a bridge in the participants answer.
type bridgeSummary struct {
	Node         string `json:"node"`
	Region       string `json:"region,omitempty"`
	Participants int    `json:"participants"`
	Error        string `json:"error,omitempty"`
}

// listClusterParticipants lists a room's participants across all its bridges:
// this node's, then each other bridge's, each participant with its "node".
func (a *Admin) listClusterParticipants(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("room")
	if !signal.ValidRoom(name) {
		apiError(w, http.StatusNotFound, "not-found", "not a room name")
		return
	}
	if !a.scopeOf(r).allows(name) {
		apiError(w, http.StatusForbidden, signal.CodeForbidden, fmt.Sprintf("the token administers room %q only", a.scopeOf(r).room))
		return
	}
	participants := []map[string]any{}
	bridges := []bridgeSummary{}
	if rm, ok := a.Hub.Room(name); ok {
		if st, ok := rm.Stats(time.Now()); ok {
			for _, p := range st.Participants {
				b, _ := json.Marshal(p)
				participants = append(participants, withNode(b, a.Node))
			}
			bridges = append(bridges, bridgeSummary{Node: a.Node, Participants: len(st.Participants)})
		}
	}
	remote := a.Remote(r.Context(), name)
	sort.Slice(remote, func(i, j int) bool { return remote[i].Node < remote[j].Node })
	for _, b := range remote {
		for _, p := range b.Participants {
			participants = append(participants, withNode(p, b.Node))
		}
		bridges = append(bridges, bridgeSummary{Node: b.Node, Region: b.Region, Participants: len(b.Participants), Error: b.Error})
	}
	if len(bridges) == 0 {
		apiError(w, http.StatusNotFound, "not-found", fmt.Sprintf("no room %q on any bridge (a room exists while someone is in it)", name))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"participants": participants, "bridges": bridges})
}

// withNode is a participant object with the node serving it.
func withNode(raw []byte, node string) map[string]any {
	m := map[string]any{}
	_ = json.Unmarshal(raw, &m)
	m["node"] = node
	return m
}
