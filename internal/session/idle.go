package session

import (
	"time"

	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/signal"
)

// idleWatch ends joined sessions that hold a place in a room without using it:
// no peer connection on its way to or carrying media, and no signaling message,
// for the timeout (Deps.MediaTimeout). Owned by the session loop.
type idleWatch struct {
	timeout time.Duration // 0: never
	last    time.Time     // join, the last message, or the last check that found media
	timer   *time.Timer
	armed   time.Time // the deadline timer fires at
}

// touch records activity at now.
func (w *idleWatch) touch(now time.Time) { w.last = now }

// due reports whether the timeout has passed since the last activity.
func (w *idleWatch) due(now time.Time) bool { return w.timeout > 0 && now.Sub(w.last) >= w.timeout }

// arm returns the channel that fires at the deadline (nil without a timeout),
// starting the watch at now on its first call.
func (w *idleWatch) arm(now time.Time) <-chan time.Time {
	if w.timeout <= 0 {
		return nil
	}
	deadline := w.last.Add(w.timeout)
	switch {
	case w.timer == nil:
		w.last, deadline = now, now.Add(w.timeout)
		w.timer = time.NewTimer(w.timeout)
	case deadline != w.armed:
		w.timer.Reset(deadline.Sub(now))
	}
	w.armed = deadline
	return w.timer.C
}

// mediaLive reports whether a peer connection carries media or is getting
// there (connecting) or may come back (disconnected: pion declares it failed
// if it does not).
func mediaLive(pcs ...*webrtc.PeerConnection) bool {
	for _, pc := range pcs {
		if pc == nil {
			continue
		}
		switch pc.ConnectionState() {
		case webrtc.PeerConnectionStateConnecting, webrtc.PeerConnectionStateConnected, webrtc.PeerConnectionStateDisconnected:
			return true
		}
	}
	return false
}

// idleCheck runs when the idle timer fires: a session with media starts a new
// period, one without is removed with a bye (idle).
func (s *Session) idleCheck(now time.Time) {
	s.idle.armed = time.Time{} // spent: arm sets it again
	if mediaLive(s.pub, s.sub) {
		s.idle.touch(now)
		return
	}
	if !s.idle.due(now) {
		return
	}
	s.log.Info("removing an idle participant", "timeout", s.idle.timeout)
	s.Remove(signal.ByeIdle, "no media connection and no message for "+s.idle.timeout.String())
}
