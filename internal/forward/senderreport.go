package forward

import (
	"encoding/binary"
	"sync"
	"time"
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
// is also what lets pion's receiver-report interceptor see the sender reports. The
// sender reports are read in place (senderReport): pion's decoder allocated for
// every compound packet.
func (u *UpTrack) ReadFeedback(read func([]byte) (int, error)) {
	buf := make([]byte, 1500)
	for {
		n, err := read(buf)
		if err != nil {
			return
		}
		ntp, rtpTime, ok := senderReport(buf[:n], u.ssrc)
		if !ok {
			continue
		}
		report := SenderReport{NTPTime: ntp, RTPTime: rtpTime, At: time.Now()}
		u.sr.set(report)
		for _, d := range *u.downs.Load() {
			d.relaySenderReport(report, u.p.Encoding)
		}
	}
}

// senderReport reads the NTP and RTP times of ssrc's sender report in
// compound RTCP packet b (RFC 3550 6.4.1). A compound that does not split into
// well-formed packets has none, as pion's decoder rejects it whole.
func senderReport(b []byte, ssrc uint32) (ntp uint64, rtpTime uint32, ok bool) {
	const srSize = 28 // header, SSRC, sender info
	for len(b) > 0 {
		if len(b) < 4 || b[0]>>6 != 2 {
			return 0, 0, false
		}
		size := 4 * (int(binary.BigEndian.Uint16(b[2:])) + 1)
		if size > len(b) {
			return 0, 0, false
		}
		if p := b[:size]; p[1] == 200 {
			if size < srSize+24*int(p[0]&0x1f) {
				return 0, 0, false // fewer bytes than its report count
			}
			if !ok && binary.BigEndian.Uint32(p[4:]) == ssrc {
				ntp, rtpTime, ok = binary.BigEndian.Uint64(p[8:]), binary.BigEndian.Uint32(p[16:]), true
			}
		}
		b = b[size:]
	}
	return ntp, rtpTime, ok
}
