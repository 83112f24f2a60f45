package forward

import (
	"time"

	"github.com/podium-sfu/podium/internal/rewrite"
)

// sentLog is what a video DownTrack keeps per packet it sent, instead of a copy
// of the packet: which source packet it was (encoding, sequence number and
// timestamp as received) and how it was rewritten. A NACK is answered by
// reading that packet from the source's store (UpTrack.stored) and applying
// the same rewrite again. About 40 bytes a packet instead of 1,500.
type sentLog struct {
	entries []sentEntry
	mask    uint64
	highest uint64 // extended sequence number of the newest entry; 0: none
}

type sentEntry struct {
	ext      uint64 // extended (our) sequence number; 0: empty
	storedAt int64  // unix nanos: first sent
	sentAt   int64  // unix nanos: last sent
	srcTS    uint32 // the source packet's timestamp, to tell it from a reused sequence number
	srcSeq   uint16
	encoding uint8
	resent   bool
	out      rewrite.Output
}

// logOrigin keeps extended sequence numbers away from 0 (empty) in both directions.
const logOrigin = 1 << 32

func newSentLog(capacity int) *sentLog {
	return &sentLog{entries: make([]sentEntry, capacity), mask: uint64(capacity - 1)}
}

func (l *sentLog) extend(seq uint16) uint64 {
	if l.highest == 0 {
		return logOrigin + uint64(seq)
	}
	return l.highest + uint64(int64(int16(seq-uint16(l.highest))))
}

// add records that out.SequenceNumber was sent at now from the source packet
// (encoding, seq, ts).
func (l *sentLog) add(out rewrite.Output, encoding int, seq uint16, ts uint32, now time.Time) {
	ext := l.extend(out.SequenceNumber)
	n := uint64(len(l.entries))
	if l.highest != 0 && ext+n <= l.highest {
		if ext+2*n > l.highest {
			return // older than the window: nothing to keep
		}
		clear(l.entries) // a jump: start over
		l.highest = 0
		ext = l.extend(out.SequenceNumber)
	}
	l.highest = max(l.highest, ext)
	t := now.UnixNano()
	l.entries[ext&l.mask] = sentEntry{ext: ext, storedAt: t, sentAt: t, srcTS: ts, srcSeq: seq, encoding: uint8(encoding), out: out}
}

// resend returns the entry for our sequence number seq if it may be resent at
// now (known, not older than maxAge, not resent within rtt) and marks it resent.
func (l *sentLog) resend(seq uint16, now time.Time, rtt, maxAge time.Duration) (sentEntry, bool) {
	if l.highest == 0 {
		return sentEntry{}, false
	}
	ext := l.extend(seq)
	if ext+uint64(len(l.entries)) <= l.highest {
		return sentEntry{}, false
	}
	e := &l.entries[ext&l.mask]
	t := now.UnixNano()
	if e.ext != ext || e.resent && t-e.sentAt < int64(rtt) || maxAge > 0 && t-e.storedAt > int64(maxAge) {
		return sentEntry{}, false
	}
	e.sentAt, e.resent = t, true
	return *e, true
}
