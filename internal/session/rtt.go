package session

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/gridclock"
	"github.com/podium-sfu/podium/internal/wire"
)

// rttInterval is how often the connections' round-trip times are sampled.
const rttInterval = 2 * time.Second

// rtts holds the latest round-trip times of both connections, from ICE consent
// checks (STUN), which run whether or not media flows: the data plane's on a
// pair it follows (wire.Route.RTT), else pion's keepalive pings'. The sampler also feeds
// the subscribe RTT to congestion control (the NACK window) and the estimate
// to the metrics histogram.
type rtts struct {
	publish, subscribe atomic.Int64 // nanoseconds
}

// RTT implements room.Member.
func (s *Session) RTT() (publish, subscribe time.Duration) {
	return time.Duration(s.rtt.publish.Load()), time.Duration(s.rtt.subscribe.Load())
}

// sampleRTT updates the round-trip times until the session ends. Every
// session samples on the same grid (gridclock.Every): one wake-up of the server
// every rttInterval for all of them.
func (s *Session) sampleRTT() {
	gridclock.Every(s.ctx.Done(), rttInterval, func() {
		measured, ok := connRTT(s.pub, s.pubRoute)
		if ok {
			s.rtt.publish.Store(int64(measured))
		}
		if d, ok := connRTT(s.sub, s.route); ok {
			s.rtt.subscribe.Store(int64(d))
			s.link.SetRTT(d)
			if measured == 0 { // an audience member: no publish connection
				measured = d
			}
		}
		if f := s.deps.ClientRTT; f != nil && measured > 0 {
			f(s.region, s.id, measured)
		}
		if h := s.deps.Estimates; h != nil && s.link.Stats().Feedbacks > 0 {
			h.Observe(float64(s.link.Estimate()))
		}
	})
}

// pingRTT times one WebSocket ping as the connection opens (browsers answer
// it by themselves; the reader reads the pong): the client's RTT to this
// node, which a join sent elsewhere reports (place). It arrives about when
// the join does.
func (s *Session) pingRTT() {
	ctx, cancel := context.WithTimeout(s.ctx, pingTimeout)
	defer cancel()
	t0 := time.Now()
	if s.conn.Ping(ctx) == nil {
		s.pinged <- time.Since(t0)
	}
}

// pingTimeout bounds the ping; pingWait is how long a redirected join waits
// for it beyond its own arrival.
const (
	pingTimeout = 5 * time.Second
	pingWait    = 200 * time.Millisecond
)

// connRTT is the round-trip time of pc, whose data-plane route is r (nil:
// none): the data plane's consent checks' once they measured it, pion's pair
// statistics otherwise (which allocate, and which pion measures only with its
// keepalive pings: an ICE-TCP pair or a connection on pion's path).
func connRTT(pc *webrtc.PeerConnection, r *wire.Route) (time.Duration, bool) {
	if pc == nil {
		return 0, false
	}
	if d, ok := r.RTT(); ok {
		return d, true
	}
	return pairRTT(pc)
}

// pairRTT is the current round-trip time of pc's selected candidate pair. It
// asks the ICE transport only (pc.GetStats races with the Close pion starts by
// itself when the connection's DTLS ends), and only once ICE has connected:
// pion writes the transport's fields unguarded when ICE starts, and the
// connected state, read atomically, is reported after that.
func pairRTT(pc *webrtc.PeerConnection) (time.Duration, bool) {
	if pc == nil { // an audience member's publish connection
		return 0, false
	}
	if st := pc.ICEConnectionState(); st != webrtc.ICEConnectionStateConnected && st != webrtc.ICEConnectionStateCompleted {
		return 0, false
	}
	p, ok := pc.SCTP().Transport().ICETransport().GetSelectedCandidatePairStats()
	if !ok || p.CurrentRoundTripTime <= 0 {
		return 0, false
	}
	return time.Duration(p.CurrentRoundTripTime * float64(time.Second)), true
}
