package forward

import (
	"math"
	"time"

	"github.com/podium-sfu/podium/internal/rewrite"
)

// sentLog is what a video DownTrack keeps per packet it sent, instead of a copy
// of the packet: which source packet it was (encoding, sequence number and
// timestamp as received) and how it was rewritten. A NACK is answered by
// reading that packet from the source's store (UpTrack.stored) and applying
// the same rewrite again. 32 bytes a packet instead of 1,500: each packet
// sent writes one, two to a cache line. Like the source stores, it starts at
// storeMinSlots entries and doubles (up to its largest) while it would
// overwrite a packet sent less than storeHorizon ago.
type sentLog struct {
	entries   []sentEntry
	mask      uint64
	max       int    // entries it may grow to
	highest   uint64 // extended sequence number of the newest entry; 0: none
	segment   uint64 // extended sequence number of the newest segment's key frame
	segmentAt int64  // unix nanos: when it was sent
	segmentTS uint32 // its source timestamp
	keyBytes  int    // payload bytes of that key frame sent so far
}

type sentEntry struct {
	storedAt    int64  // unix nanos: first sent
	ext         uint32 // low 32 bits of the extended (our) sequence number (sentLog.full)
	srcTS       uint32 // the source packet's timestamp, to tell it from a reused sequence number
	ts          uint32 // the rewrite: timestamp…
	resentAfter uint32 // µs from storedAt to the last resend (sentResent); saturates
	srcSeq      uint16
	pictureID   uint16 // …picture id, TL0PICIDX, KEYIDX
	tl0PicIdx   uint8
	keyIdx      uint8
	encoding    uint8
	flags       uint8
}

const (
	sentUsed   = 1 << iota // the entry holds a packet
	sentResent             // resent at least once, last resentAfter after storedAt
	sentBase               // temporal layer 0: every later frame of the segment references it
	sentMarker             // the rewrite's marker bit
)

func (e *sentEntry) used() bool   { return e.flags&sentUsed != 0 }
func (e *sentEntry) resent() bool { return e.flags&sentResent != 0 }

// sentAt is when e was last sent, in unix nanos.
func (e *sentEntry) sentAt() int64 { return e.storedAt + int64(e.resentAfter)*1e3 }

// out is the rewrite e was sent with (our sequence number is ext's low 16 bits).
func (e *sentEntry) out() rewrite.Output {
	return rewrite.Output{SequenceNumber: uint16(e.ext), Timestamp: e.ts, PictureID: e.pictureID,
		TL0PICIDX: e.tl0PicIdx, KEYIDX: e.keyIdx, Marker: e.flags&sentMarker != 0, SwitchedTo: -1}
}

// logOrigin keeps extended sequence numbers away from 0 (none) in both directions.
const logOrigin = 1 << 32

// newSentLog makes a log that grows to capacity entries, a power of two.
func newSentLog(capacity int) *sentLog {
	n := min(capacity, storeMinSlots)
	return &sentLog{entries: make([]sentEntry, n), mask: uint64(n - 1), max: capacity}
}

// grow doubles the entries, moving what they hold.
func (l *sentLog) grow() {
	old := l.entries
	l.entries, l.mask = make([]sentEntry, 2*len(old)), uint64(2*len(old)-1)
	for _, e := range old {
		if e.used() {
			l.entries[uint64(e.ext)&l.mask] = e
		}
	}
}

func (l *sentLog) extend(seq uint16) uint64 {
	if l.highest == 0 {
		return logOrigin + uint64(seq)
	}
	return l.highest + uint64(int64(int16(seq-uint16(l.highest))))
}

// full is the extended sequence number of e, an entry within the log's
// window (at most len(entries) below highest, far less than 2^32).
func (l *sentLog) full(e *sentEntry) uint64 {
	return l.highest - uint64(uint32(l.highest)-e.ext)
}

// add records that out.SequenceNumber, size payload bytes, was sent at now
// from the source packet (encoding, seq, ts), of the base temporal layer or not.
func (l *sentLog) add(out rewrite.Output, encoding int, seq uint16, ts uint32, base bool, size int, now time.Time) {
	ext := l.extend(out.SequenceNumber)
	n := uint64(len(l.entries))
	if l.highest != 0 && ext+n <= l.highest {
		if ext+2*n > l.highest {
			return // older than the window: nothing to keep
		}
		clear(l.entries) // a jump: start over
		l.highest, l.segment = 0, 0
		ext = l.extend(out.SequenceNumber)
	}
	l.highest = max(l.highest, ext)
	t := now.UnixNano()
	if out.SwitchedTo >= 0 {
		l.segment, l.segmentAt, l.segmentTS, l.keyBytes = ext, t, ts, 0
	}
	if ts == l.segmentTS && ext >= l.segment {
		l.keyBytes += size
	}
	for e := &l.entries[ext&l.mask]; e.used() && e.ext != uint32(ext) && t-e.storedAt < int64(storeHorizon) && len(l.entries) < l.max; e = &l.entries[ext&l.mask] {
		l.grow()
	}
	flags := uint8(sentUsed)
	if base {
		flags |= sentBase
	}
	if out.Marker {
		flags |= sentMarker
	}
	l.entries[ext&l.mask] = sentEntry{storedAt: t, ext: uint32(ext), srcTS: ts, ts: out.Timestamp, srcSeq: seq,
		pictureID: out.PictureID, tl0PicIdx: out.TL0PICIDX, keyIdx: out.KEYIDX, encoding: uint8(encoding), flags: flags}
}

// resendCheck is why a NACKed packet may or may not be resent.
type resendCheck uint8

const (
	resendOK       resendCheck = iota
	resendUnknown              // never sent to this receiver, or no longer logged
	resendInFlight             // resent less than an RTT ago: the receiver cannot have seen that copy yet
	resendTooOld               // first sent longer than maxAge ago: it would arrive too late to be played
)

// lookup returns the entry for our sequence number seq (nil: unknown) and
// whether it may be resent at now. It changes nothing: the caller marks the
// entry resent (markResent) only once the answer is really sent, so that an
// answer refused by the budget leaves the receiver's next NACK answerable.
func (l *sentLog) lookup(seq uint16, now time.Time, rtt, maxAge time.Duration) (*sentEntry, resendCheck) {
	if l.highest == 0 {
		return nil, resendUnknown
	}
	ext := l.extend(seq)
	if ext+uint64(len(l.entries)) <= l.highest {
		return nil, resendUnknown
	}
	e := &l.entries[ext&l.mask]
	t := now.UnixNano()
	switch {
	case !e.used() || e.ext != uint32(ext):
		return nil, resendUnknown
	case e.resent() && t-e.sentAt() < int64(rtt):
		return e, resendInFlight
	case maxAge > 0 && t-e.storedAt > int64(maxAge):
		return e, resendTooOld
	}
	return e, resendOK
}

// markResent records that e was resent at now.
func (l *sentLog) markResent(e *sentEntry, now time.Time) {
	e.resentAfter = uint32(min(max(now.UnixNano()-e.storedAt, 0)/1e3, math.MaxUint32))
	e.flags |= sentResent
}

// needed reports whether the receiver cannot decode on without e: a packet
// of the base temporal layer in the newest segment (a lost packet of an
// earlier segment or of a higher layer costs at most the frames up to the
// next base-layer frame or key frame).
func (l *sentLog) needed(e *sentEntry) bool {
	return e.flags&sentBase != 0 && l.full(e) >= l.segment
}
