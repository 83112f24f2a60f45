package forward

import (
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/webrtc/v4"
)

// ReceptionReport is the receiver report block for this stream as of now
// (false before its first packet), with the newest sender report's LSR/DLSR
// so the sender can measure the round trip. Each call starts the next
// report's interval (fraction lost).
func (u *UpTrack) ReceptionReport(now time.Time) (rtcp.ReceptionReport, bool) {
	sr, ok := u.LastSenderReport()
	var lsr uint32
	var at time.Time
	if ok {
		lsr, at = uint32(sr.NTPTime>>16), sr.At
	}
	u.rx.Lock()
	defer u.rx.Unlock()
	return u.recv.report(now, u.ssrc, lsr, at)
}

// Missing appends to dst the sequence numbers to NACK now: each lost packet
// at once, then at most once per rtt (the publish connection's round trip, 0
// when unknown), up to ten times. Nothing for a codec without NACK feedback.
func (u *UpTrack) Missing(now time.Time, rtt time.Duration, dst []uint16) []uint16 {
	u.rx.Lock()
	defer u.rx.Unlock()
	return u.recv.nacks(now, rtt, dst)
}

// Awaiting reports whether packets are missing that a later Missing may list
// (a NACK again once a round trip passed).
func (u *UpTrack) Awaiting() bool {
	u.rx.Lock()
	defer u.rx.Unlock()
	return u.recv.nMissing > 0
}

// OnLoss sets f, called when packets go missing on a stream that repairs
// losses: on the receiving goroutine, under the stream's receive lock, so f
// must neither block nor call back into the UpTrack. OnLoss(nil) stops telling.
func (u *UpTrack) OnLoss(f func()) {
	if f == nil {
		u.onLoss.Store(nil) // a pointer to a nil func would be called
		return
	}
	u.onLoss.Store(&f)
}

// SSRC is the received stream's SSRC.
func (u *UpTrack) SSRC() uint32 { return u.ssrc }

func hasNACK(fb []webrtc.RTCPFeedback) bool {
	for _, f := range fb {
		if f.Type == webrtc.TypeRTCPFBNACK && f.Parameter == "" {
			return true
		}
	}
	return false
}
