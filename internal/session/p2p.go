package session

import (
	"errors"

	"github.com/podium-sfu/podium/internal/room"
	"github.com/podium-sfu/podium/internal/signal"
)

// handleP2P relays a direct connection's offer, answer or candidate to the
// sender's P2P peer (docs/protocol.md, "Peer to peer"); the room checks that
// the target is that peer, in this epoch, and the sender's relay rate. A
// refusal is a non-fatal error and the message is dropped.
func (s *Session) handleP2P(typ string, p *signal.P2PSignal) error {
	err := s.room.RelayP2P(s, typ, *p)
	switch {
	case errors.Is(err, room.ErrP2PRate):
		return signal.Errorf(signal.CodeP2PRateLimited, false, "%s: at most %d P2P messages at once, %d a second; message dropped", typ, room.P2PBurst, room.P2PRate)
	case errors.Is(err, room.ErrP2PNotPeer):
		return signal.Errorf(signal.CodeP2PNotPeer, false, "%s: %q is not your P2P peer in epoch %d; message dropped", typ, truncateID(p.To), p.Epoch)
	}
	return err
}

func truncateID(id string) string {
	if len(id) > 64 {
		return id[:64]
	}
	return id
}
