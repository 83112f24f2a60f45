package forward

import (
	"sync"
	"time"

	"github.com/pion/rtcp"
)

// SenderReport is the sender's latest NTP/RTP timestamp pair for a stream, which
// lets receivers synchronise audio and video; it must be translated whenever RTP
// timestamps are rewritten.
type SenderReport struct {
	NTPTime uint64
	RTPTime uint32
	At      time.Time // when it arrived
}

type srStore struct {
	mu   sync.Mutex
	last SenderReport
	ok   bool
}

func (s *srStore) set(r SenderReport) {
	s.mu.Lock()
	s.last, s.ok = r, true
	s.mu.Unlock()
}

// LastSenderReport returns the newest sender report received for this track.
func (u *UpTrack) LastSenderReport() (SenderReport, bool) {
	u.sr.mu.Lock()
	defer u.sr.mu.Unlock()
	return u.sr.last, u.sr.ok
}

// ReadFeedback drains the sender's RTCP for this track until read fails. Reading it
// is also what lets pion's receiver-report interceptor see the sender reports.
func (u *UpTrack) ReadFeedback(read func([]byte) (int, error)) {
	readRTCP(read, func(pkts []rtcp.Packet) {
		for _, p := range pkts {
			if sr, ok := p.(*rtcp.SenderReport); ok && sr.SSRC == u.ssrc {
				report := SenderReport{NTPTime: sr.NTPTime, RTPTime: sr.RTPTime, At: time.Now()}
				u.sr.set(report)
				for _, d := range *u.downs.Load() {
					d.relaySenderReport(report, u.p.Encoding)
				}
			}
		}
	})
}
