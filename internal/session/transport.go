package session

import (
	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/signal"
)

// transportChanged runs on a pion goroutine when connection name (publish or
// subscribe) changes state. A connection that failed (ICE or DTLS) or was
// closed by pion (its DTLS ended: the peer's close_notify or fatal alert) never
// carries media again, so the session ends at once with a fatal
// transport-failed error, and the client reconnects with its resume id: new
// connections within about a second instead of an ICE timeout (30 s) later.
// Closes of our own come after the session's context is cancelled and are
// ignored.
func (s *Session) transportChanged(name string, st webrtc.PeerConnectionState) {
	if st == webrtc.PeerConnectionStateDisconnected && s.ctx.Err() == nil {
		if c := s.deps.Counters; c != nil {
			c.Lapses.Add(1)
		}
		s.log.Info("transport disconnected", "pc", name)
	}
	if st != webrtc.PeerConnectionStateFailed && st != webrtc.PeerConnectionStateClosed {
		return
	}
	if s.ctx.Err() != nil {
		return
	}
	s.log.Warn("transport failed", "pc", name, "state", st.String())
	pe := signal.Errorf(signal.CodeTransportFailed, true, "%s connection %s; reconnect", name, st)
	s.sendError(pe)
	s.cancel(pe)
}
