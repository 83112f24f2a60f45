package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/podium-sfu/podium/internal/cluster"
	"github.com/podium-sfu/podium/internal/signal"
)

// Room settings across bridges (docs/cluster.md): a change at any node — the
// admin API or a moderator's room-settings — is a compare-and-set on the
// room's key in the cluster's settings bucket (decide); every bridge applies
// the key's revisions in order from its watch, on the room's loop (apply).

// sharedSettings is a room's settings key: every field some change has set,
// the latest value of each. Unlike signal.RoomSettings it keeps an emptied
// stage (OnStage set to none).
type sharedSettings struct {
	LastN        *int      `json:"lastN,omitempty"`
	OnStage      *[]string `json:"onStage,omitempty"`
	E2EERequired *bool     `json:"e2eeRequired,omitempty"`
	P2P          *bool     `json:"p2p,omitempty"`
	AudioSlots   *int      `json:"audioSlots,omitempty"`
}

// merge is cur with the fields patch sets replaced.
func (cur sharedSettings) merge(patch signal.RoomSettings) sharedSettings {
	if patch.LastN != nil {
		cur.LastN = patch.LastN
	}
	if patch.OnStage != nil {
		stage := slices.Clone(patch.OnStage)
		cur.OnStage = &stage
	}
	if patch.E2EERequired != nil {
		cur.E2EERequired = patch.E2EERequired
	}
	if patch.P2P != nil {
		cur.P2P = patch.P2P
	}
	if patch.AudioSlots != nil {
		cur.AudioSlots = patch.AudioSlots
	}
	return cur
}

// over is base (nil: none) with the fields the key sets replaced.
func (cur sharedSettings) over(base *signal.RoomSettings) signal.RoomSettings {
	var out signal.RoomSettings
	if base != nil {
		out = *base
	}
	out.LastN, out.E2EERequired, out.P2P, out.AudioSlots = or(cur.LastN, out.LastN), or(cur.E2EERequired, out.E2EERequired),
		or(cur.P2P, out.P2P), or(cur.AudioSlots, out.AudioSlots)
	if cur.OnStage != nil {
		out.OnStage = append([]string{}, (*cur.OnStage)...) // non-nil: an empty stage clears it
	}
	return out
}

func or[T any](a, b *T) *T {
	if a != nil {
		return a
	}
	return b
}

func decodeShared(b []byte) (sharedSettings, error) {
	var s sharedSettings
	if len(b) == 0 {
		return s, nil
	}
	return s, json.Unmarshal(b, &s)
}

// settingsWait bounds a settings change: the compare-and-set, then this
// node's apply.
const settingsWait = 3 * time.Second

// changeSettings changes roomName's settings on every bridge serving it and
// returns once this node has applied them (session.Deps.Settings, the admin
// API). Until the cluster's JetStream has a leader (a cluster forming) no
// other bridge can serve the room: the change is then applied here alone.
func (s *Server) changeSettings(roomName string, patch signal.RoomSettings) error {
	ctx, cancel := context.WithTimeout(context.Background(), settingsWait)
	defer cancel()
	rev, err := s.settings.Change(ctx, roomName, func(cur []byte) ([]byte, error) {
		sh, err := decodeShared(cur)
		if err != nil {
			return nil, err
		}
		return json.Marshal(sh.merge(patch))
	})
	if errors.Is(err, cluster.ErrSettingsUnavailable) {
		if rm, ok := s.hub.Room(roomName); ok {
			rm.UpdateSettings(patch)
			s.node.Touch()
			return nil
		}
	}
	if err != nil {
		return fmt.Errorf("room settings not changed: %w", err)
	}
	if err := s.settings.WaitApplied(ctx, roomName, rev); err != nil {
		return fmt.Errorf("room settings changed (revision %d) but not yet applied here: %w", rev, err)
	}
	return nil
}

// applySettings applies a revision of a room's settings key to the room if
// it is served here (the settings watch, the only goroutine calling it).
func (s *Server) applySettings(st cluster.Setting) {
	sh, err := decodeShared(st.Value)
	if err != nil {
		s.log.Warn("cluster: bad room settings", "room", st.Room, "err", err)
		return
	}
	if rm, ok := s.hub.Room(st.Room); ok && rm.ApplySettings(sh.over(nil), st.Revision) {
		s.node.Touch() // the directory entry shows them at once
	}
}

// inherit is the settings a room that a join opens here takes
// (session.Deps.Inherit): the room's settings key over what its entries at
// other bridges hold. With a key, they are applied here at its revision, so
// that a change the watch applies meanwhile is not undone, and nil returned.
// The chat history comes from another bridge meanwhile (seedChat).
func (s *Server) inherit(roomName string) *signal.RoomSettings {
	s.sessions.Add(1) // the opening session's: Serve waits for it
	go func() { defer s.sessions.Done(); s.seedChat(roomName) }()
	base := s.inheritEntries(roomName)
	st, ok := s.settings.Get(roomName)
	if !ok {
		return base
	}
	sh, err := decodeShared(st.Value)
	rm, here := s.hub.Room(roomName)
	if err != nil || !here {
		return base
	}
	rm.ApplySettings(sh.over(base), st.Revision)
	return nil
}

// servedRooms are the rooms served here (the settings keys refreshed).
func (s *Server) servedRooms() []string {
	var out []string
	for _, rm := range s.hub.Rooms() {
		out = append(out, rm.Name())
	}
	return out
}
