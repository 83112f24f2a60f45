package session

import "github.com/podium-sfu/podium/internal/signal"

// changeSettings applies a moderator's room-settings: in a cluster through
// the cluster's settings entry, which every bridge of the room applies
// (docs/cluster.md); a failure there is a non-fatal error and nothing changes.
func (s *Session) changeSettings(c signal.RoomSettings) error {
	if s.deps.Settings != nil {
		if err := s.deps.Settings(s.room.Name(), c); err != nil {
			return signal.Errorf(signal.CodeInternal, false, "%v", err)
		}
	} else if n := s.room.UpdateSettings(c); c.E2EERequired != nil {
		s.log.Info("room E2EE requirement changed", "e2eeRequired", *c.E2EERequired, "unencrypted", n)
	}
	if c.P2P != nil {
		s.log.Info("room P2P setting changed", "p2p", *c.P2P)
	}
	return nil
}
