package forward

import (
	"time"

	"github.com/pion/rtcp"
)

// recvLog is a received stream's reception statistics (RFC 3550 section 6.4.1,
// appendix A.3 and A.8) and the sequence numbers it misses, from which the
// SFU's receiver reports and NACKs to the publisher are built when the data
// plane reads the publishers' packets itself (pion's interceptors then see
// none of them). Pure: time is an argument; its UpTrack's receive lock owns it.
type recvLog struct {
	started       bool
	maxSeq        uint16
	cycles        uint32 // sequence number wraps, shifted left 16
	baseSeq       uint32
	received      uint32
	expectedPrior uint32
	receivedPrior uint32
	jitter        float64 // in timestamp units
	clockRate     float64
	lastTS        uint32
	lastArrival   time.Time

	nack     bool // the sender repairs losses (NACK negotiated)
	missing  [maxMissing]missingSeq
	nMissing int
}

// missingSeq is one sequence number not received, and when it was last NACKed.
type missingSeq struct {
	seq    uint16
	nacked time.Time
	tries  uint8
}

const (
	// maxMissing bounds the NACK list (a longer gap is a lost burst that only a
	// keyframe repairs; the newest numbers are kept).
	maxMissing = 256
	// maxNACKs per sequence number, as libwebrtc's receivers: after that the
	// packet is given up.
	maxNACKs = 10
	// defaultNACKRTT is the wait between two NACKs of a packet while the round
	// trip is unknown (libwebrtc's default RTT); minNACKWait the shortest.
	defaultNACKRTT = 100 * time.Millisecond
	minNACKWait    = 20 * time.Millisecond
)

func newRecvLog(clockRate uint32, nack bool) recvLog {
	return recvLog{clockRate: float64(clockRate), nack: nack}
}

// add records a packet with sequence number seq and RTP timestamp ts that
// arrived at now; lost reports that it put packets on the NACK list.
func (r *recvLog) add(now time.Time, seq uint16, ts uint32) (lost bool) {
	if !r.started {
		r.started = true
		r.maxSeq, r.baseSeq, r.received = seq, uint32(seq), 1
		r.lastTS, r.lastArrival = ts, now
		return false
	}
	r.received++
	diff := seq - r.maxSeq
	if diff == 0 || diff >= 1<<15 { // a duplicate, late or retransmitted packet
		r.found(seq)
		return false
	}
	if seq < r.maxSeq {
		r.cycles += 1 << 16
	}
	if r.nack {
		if diff > maxMissing {
			r.nMissing = 0 // nothing older is worth asking for
		}
		for s := seq - min(diff-1, maxMissing); s != seq; s++ {
			r.lose(s)
		}
		lost = diff > 1
	}
	r.maxSeq = seq
	// Interarrival jitter (RFC 3550 A.8), from in-order packets only.
	if r.clockRate > 0 {
		d := now.Sub(r.lastArrival).Seconds()*r.clockRate - float64(int32(ts-r.lastTS))
		if d < 0 {
			d = -d
		}
		r.jitter += (d - r.jitter) / 16
	}
	r.lastTS, r.lastArrival = ts, now
	return lost
}

// lose adds seq to the NACK list, dropping the oldest entry when it is full.
func (r *recvLog) lose(seq uint16) {
	if r.nMissing == maxMissing {
		copy(r.missing[:], r.missing[1:])
		r.nMissing--
	}
	r.missing[r.nMissing] = missingSeq{seq: seq}
	r.nMissing++
}

// found takes seq off the NACK list.
func (r *recvLog) found(seq uint16) {
	for i := range r.nMissing {
		if r.missing[i].seq == seq {
			copy(r.missing[i:r.nMissing], r.missing[i+1:r.nMissing])
			r.nMissing--
			return
		}
	}
}

// nacks appends to dst the sequence numbers to ask for now: each missing
// packet at once, then again only once a round trip (rtt, 0: unknown) has
// passed since its last NACK, as the answer could not have arrived before;
// up to maxNACKs times.
func (r *recvLog) nacks(now time.Time, rtt time.Duration, dst []uint16) []uint16 {
	if rtt <= 0 {
		rtt = defaultNACKRTT
	}
	wait := max(rtt, minNACKWait)
	kept := 0
	for i := range r.nMissing {
		m := r.missing[i]
		if m.tries >= maxNACKs {
			continue
		}
		if m.nacked.IsZero() || now.Sub(m.nacked) >= wait {
			dst = append(dst, m.seq)
			m.nacked = now
			m.tries++
		}
		r.missing[kept] = m
		kept++
	}
	r.nMissing = kept
	return dst
}

// report is the stream's reception report block as of now, ssrc the
// stream's. lsr is the middle 32 bits of the newest sender report's NTP time
// and srAt when it arrived (zero: none yet).
func (r *recvLog) report(now time.Time, ssrc, lsr uint32, srAt time.Time) (rtcp.ReceptionReport, bool) {
	if !r.started {
		return rtcp.ReceptionReport{}, false
	}
	extMax := r.cycles | uint32(r.maxSeq)
	expected := extMax - r.baseSeq + 1
	lost := int64(expected) - int64(r.received)
	lost = min(max(lost, 0), 0x7fffff)
	expInterval := expected - r.expectedPrior
	recvInterval := r.received - r.receivedPrior
	r.expectedPrior, r.receivedPrior = expected, r.received
	var fraction uint8
	if lostInterval := int64(expInterval) - int64(recvInterval); expInterval > 0 && lostInterval > 0 {
		fraction = uint8(min(lostInterval<<8/int64(expInterval), 255))
	}
	rr := rtcp.ReceptionReport{
		SSRC: ssrc, FractionLost: fraction, TotalLost: uint32(lost),
		LastSequenceNumber: extMax, Jitter: uint32(r.jitter), LastSenderReport: lsr,
	}
	if !srAt.IsZero() && lsr != 0 {
		rr.Delay = uint32(now.Sub(srAt).Seconds() * 65536)
	}
	return rr, true
}
