package room

import "github.com/podium-sfu/podium/internal/signal"

// ApplySettings applies the room's settings as the cluster's settings entry
// holds them at revision rev (docs/cluster.md, Room settings across
// bridges), unless this room has already applied that revision or a later
// one: the room loop orders the revisions, so a late writer (a room opening
// with what it read before a change) cannot undo a newer change. It reports
// whether they were applied.
func (r *Room) ApplySettings(c signal.RoomSettings, rev uint64) bool {
	applied := false
	r.do(func(s *state) {
		if applied = rev > s.settingsRev; applied {
			s.settingsRev = rev
			s.updateSettings(c)
		}
	})
	return applied
}
