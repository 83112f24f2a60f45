package forward

import (
	"encoding/binary"
	"sync"
	"time"

	"github.com/podium-sfu/podium/internal/wire"
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
// every compound packet. Their translations to the receivers on the own data
// plane go out in one batch per report.
func (u *UpTrack) ReadFeedback(read func([]byte) (int, error)) {
	buf := make([]byte, 1500)
	var out *wire.Batch // made for the first report with receivers
	for {
		n, err := read(buf)
		if err != nil {
			return
		}
		ntp, rtpTime, ok := senderReport(buf[:n], u.ssrc)
		if !ok {
			continue
		}
		if out == nil && len(*u.downs.Load()) > 0 {
			out = wire.NewBatch(srBatch)
			if u.p.Meter != nil {
				out.Stats = &u.p.Meter.Wire
			}
		}
		u.relay(SenderReport{NTPTime: ntp, RTPTime: rtpTime, At: time.Now()}, out)
		if out != nil {
			out.Flush()
		}
	}
}

// ReceiveReport takes the sender's compound RTCP packet b (authenticated and
// decrypted; valid only during the call) as the data plane reads it at the
// socket (wire.Inbound.TakeWithReports), received at now, and queues the
// report's translations in out, the socket reader's batch, which the reader
// flushes after. It allocates nothing.
func (u *UpTrack) ReceiveReport(now time.Time, b []byte, out *wire.Batch) {
	ntp, rtpTime, ok := senderReport(b, u.ssrc)
	if !ok {
		return
	}
	u.relay(SenderReport{NTPTime: ntp, RTPTime: rtpTime, At: now}, out)
}

// relay keeps report and translates it for every receiver, flushing out
// whenever it is full (nil: no receiver had joined when the caller looked,
// and a report on the own data plane goes to none).
func (u *UpTrack) relay(report SenderReport, out *wire.Batch) {
	u.sr.set(report)
	for _, d := range *u.downs.Load() {
		if out != nil && out.Free() == 0 {
			out.Flush()
		}
		d.relaySenderReport(report, u.p.Encoding, out)
	}
}

// srBatch: a report goes to every receiver of the source (7 in meeting-8),
// a few per system call (each slot is an MTU: 32 readers in meeting-8).
const srBatch = 4

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
