package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/podium-sfu/podium/internal/room"
	"github.com/podium-sfu/podium/internal/signal"
)

// ClusterAdmin carries the admin API's actions to the room's other bridges
// (a cluster: docs/cluster.md, Admin API and metrics across bridges), so
// that an operator gets the same answer whichever node is reached.
type ClusterAdmin interface {
	// Settings changes the room's settings on every bridge serving it and
	// returns once this node applied them.
	Settings(ctx context.Context, room string, c signal.RoomSettings) error
	// Participant runs act at the bridge serving participant id of room and
	// returns the participant as that bridge shows it afterwards, with the
	// bridge; found is false when no other bridge serves it.
	Participant(ctx context.Context, room, id string, act ParticipantAction) (p json.RawMessage, node string, found bool, err error)
	// Room is the room's details at another bridge serving it (found false: none).
	Room(ctx context.Context, room string) (st json.RawMessage, node string, found bool, err error)
	// Close closes the room at every other bridge serving it and returns
	// how many participants they removed.
	Close(ctx context.Context, room string) (removed int, err error)
	// Elsewhere lists the rooms other bridges serve and this node does not.
	Elsewhere() []string
}

// ParticipantAction is what the admin API does to a participant of another
// bridge: look (the zero value), mute or remove.
type ParticipantAction struct {
	Mute   *signal.Muted `json:"mute,omitempty"`
	Remove bool          `json:"remove,omitempty"`
}

// ErrBridgeTimeout: a bridge did not answer in time.
var ErrBridgeTimeout = errors.New("a bridge did not answer in time")

// clusterError answers a failure to reach another bridge: 504 when it timed
// out, else 502 (the bridge is gone or refused).
func clusterError(w http.ResponseWriter, err error) {
	if errors.Is(err, ErrBridgeTimeout) || errors.Is(err, context.DeadlineExceeded) {
		apiError(w, http.StatusGatewayTimeout, "bridge-timeout", err.Error())
		return
	}
	apiError(w, http.StatusBadGateway, "bridge-unavailable", err.Error())
}

// remoteParticipant runs act on a participant this node does not serve, at
// its bridge; ok false when the answer is written (an error, or no such
// participant anywhere).
func (a *Admin) remoteParticipant(w http.ResponseWriter, r *http.Request, act ParticipantAction) (map[string]any, bool) {
	name, id := r.PathValue("room"), r.PathValue("id")
	raw, node, found, err := a.Cluster.Participant(r.Context(), name, id, act)
	switch {
	case err != nil:
		clusterError(w, err)
		return nil, false
	case !found:
		apiError(w, http.StatusNotFound, "not-found", fmt.Sprintf("no participant %q in room %q on any bridge", truncate(id), name))
		return nil, false
	}
	return withNode(raw, node), true
}

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
	var local *room.Stats
	if rm, ok := a.Hub.Room(name); ok {
		if st, ok := rm.Stats(time.Now()); ok {
			local = &st
		}
	}
	participants, bridges := a.clusterParticipants(r.Context(), name, local)
	if len(bridges) == 0 {
		apiError(w, http.StatusNotFound, "not-found", fmt.Sprintf("no room %q on any bridge (a room exists while someone is in it)", name))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"participants": participants, "bridges": bridges})
}

// clusterParticipants is a room's participants across its bridges, each with
// its "node": this node's (local, when it serves the room), then each other
// bridge's; and a summary per bridge.
func (a *Admin) clusterParticipants(ctx context.Context, name string, local *room.Stats) ([]map[string]any, []bridgeSummary) {
	participants := []map[string]any{}
	bridges := []bridgeSummary{}
	if local != nil {
		for _, p := range local.Participants {
			b, _ := json.Marshal(p)
			participants = append(participants, withNode(b, a.Node))
		}
		bridges = append(bridges, bridgeSummary{Node: a.Node, Participants: len(local.Participants)})
	}
	remote := a.Remote(ctx, name)
	sort.Slice(remote, func(i, j int) bool { return remote[i].Node < remote[j].Node })
	for _, b := range remote {
		for _, p := range b.Participants {
			participants = append(participants, withNode(p, b.Node))
		}
		bridges = append(bridges, bridgeSummary{Node: b.Node, Region: b.Region, Participants: len(b.Participants), Error: b.Error})
	}
	return participants, bridges
}

// clusterRoom is a room's details (raw, as served at node) with its
// participants across all its bridges and the bridges' summary.
func (a *Admin) clusterRoom(ctx context.Context, name string, raw []byte, node string, local *room.Stats) map[string]any {
	m := withNode(raw, node)
	m["participants"], m["bridges"] = a.clusterParticipants(ctx, name, local)
	return m
}

// withNode is a participant object with the node serving it.
func withNode(raw []byte, node string) map[string]any {
	m := map[string]any{}
	_ = json.Unmarshal(raw, &m)
	m["node"] = node
	return m
}

// remoteRooms bounds the rooms of other bridges asked for at once.
const remoteRooms = 16

// roomError is a room of another bridge that could not be read.
type roomError struct {
	Room  string `json:"room"`
	Error string `json:"error"`
}

// listClusterRooms answers GET /rooms in a cluster: the rooms served here
// (local), then those only other bridges serve, each read at one of its
// bridges (with its node); errors lists those that could not be read.
func (a *Admin) listClusterRooms(w http.ResponseWriter, r *http.Request, local []room.Stats) {
	sc := a.scopeOf(r)
	out := make([]any, 0, len(local))
	for _, st := range local {
		out = append(out, st)
	}
	var names []string
	for _, name := range a.Cluster.Elsewhere() {
		if sc.allows(name) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	found := make([]map[string]any, len(names))
	errs := make([]error, len(names))
	sem := make(chan struct{}, remoteRooms)
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			raw, node, ok, err := a.Cluster.Room(r.Context(), name)
			if ok {
				found[i] = withNode(raw, node)
			} else {
				errs[i] = err // nil: it has just ended
			}
		}()
	}
	wg.Wait()
	var failed []roomError
	for i := range names {
		switch {
		case found[i] != nil:
			out = append(out, found[i])
		case errs[i] != nil:
			failed = append(failed, roomError{Room: names[i], Error: errs[i].Error()})
		}
	}
	body := map[string]any{"rooms": out}
	if len(failed) > 0 {
		body["errors"] = failed
	}
	writeJSON(w, http.StatusOK, body)
}

// remoteRoom answers GET /rooms/{room} for a room served only elsewhere:
// its details at one of its bridges, with that bridge's node.
func (a *Admin) remoteRoom(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("room")
	raw, node, found, err := a.Cluster.Room(r.Context(), name)
	switch {
	case err != nil:
		clusterError(w, err)
	case !found:
		apiError(w, http.StatusNotFound, "not-found", fmt.Sprintf("no room %q on any bridge (a room exists while someone is in it)", name))
	case a.Remote != nil:
		writeJSON(w, http.StatusOK, a.clusterRoom(r.Context(), name, raw, node, nil))
	default:
		writeJSON(w, http.StatusOK, withNode(raw, node))
	}
}

// patchClusterRoom changes a room's settings on every bridge serving it: the
// cluster's settings entry, applied here before the answer (rm nil: the
// room is served elsewhere only; the answer is then its details there).
func (a *Admin) patchClusterRoom(w http.ResponseWriter, r *http.Request, rm *room.Room, c signal.RoomSettings) {
	name := r.PathValue("room")
	if rm == nil {
		if _, _, found, err := a.Cluster.Room(r.Context(), name); err != nil || !found {
			if err != nil {
				clusterError(w, err)
			} else {
				apiError(w, http.StatusNotFound, "not-found", fmt.Sprintf("no room %q on any bridge (a room exists while someone is in it)", name))
			}
			return
		}
	}
	if err := a.Cluster.Settings(r.Context(), name, c); err != nil {
		apiError(w, http.StatusServiceUnavailable, "cluster-unavailable", err.Error())
		return
	}
	a.audit(r, "room settings changed", "room", name, "lastN", c.LastN, "onStage", c.OnStage,
		"e2eeRequired", c.E2EERequired, "p2p", c.P2P, "audioSlots", c.AudioSlots)
	if rm == nil {
		a.remoteRoom(w, r)
		return
	}
	if st, ok := a.stats(w, rm); ok {
		writeJSON(w, http.StatusOK, st)
	}
}

// closeClusterRoom closes a room on every bridge serving it (rm nil: none
// here). A bridge that could not be reached is an error (502 or 504) after
// the others were closed.
func (a *Admin) closeClusterRoom(w http.ResponseWriter, r *http.Request, rm *room.Room) {
	name := r.PathValue("room")
	n := 0
	if rm != nil {
		n = rm.CloseRoom("the room was closed by an administrator")
	}
	removed, err := a.Cluster.Close(r.Context(), name)
	n += removed
	a.audit(r, "room closed", "room", name, "participants", n, "err", err)
	switch {
	case err != nil:
		clusterError(w, fmt.Errorf("%d participants removed, but: %w", n, err))
	case rm == nil && removed == 0:
		apiError(w, http.StatusNotFound, "not-found", fmt.Sprintf("no room %q on any bridge (a room exists while someone is in it)", name))
	default:
		writeJSON(w, http.StatusOK, map[string]any{"room": name, "removed": n})
	}
}
