package rewrite

import "time"

// AudioSlot makes one continuous audio RTP stream of sources taking turns on
// a receiver's audio slot (Opus: any packet may start a source). Each source
// starts an epoch: its first packet gets the sequence number after the last
// one sent and a timestamp advanced by the wall time since then (at least
// one tick), and carries the marker bit (the start of a talkspurt), so the
// receiver's jitter buffer sees one stream with a pause, never a jump back.
// Pure: the arrival time is passed in; no allocation, no lock (the caller's).
type AudioSlot struct {
	clock   int64 // RTP clock rate, Hz
	fresh   bool  // the next packet starts an epoch
	started bool  // something was sent
	seqOff  uint16
	tsOff   uint32
	first   uint16 // the epoch's first input sequence number
	lastSeq uint16
	lastTS  uint32
	lastAt  time.Time
}

// NewAudioSlot returns a slot for a codec of clock Hz that carries nothing yet.
func NewAudioSlot(clock int) AudioSlot { return AudioSlot{clock: int64(clock)} }

// Switch starts an epoch: the next packet is a new source's first. The
// caller passes only the current source's packets to Next.
func (a *AudioSlot) Switch() { a.fresh = true }

// Next maps a packet of the current source that arrived at now into the
// slot's numbering; ok is false for a packet to drop: older than its epoch's
// first (its number would fall among the previous source's).
func (a *AudioSlot) Next(now time.Time, seq uint16, ts uint32) (outSeq uint16, outTS uint32, marker, ok bool) {
	if a.fresh {
		a.fresh = false
		a.first = seq
		if a.started {
			a.seqOff = a.lastSeq + 1 - seq
			gap := max(1, now.Sub(a.lastAt).Nanoseconds()*a.clock/int64(time.Second))
			a.tsOff = a.lastTS + uint32(gap) - ts
		} else {
			a.seqOff, a.tsOff = 0, 0 // the first source keeps its numbering
		}
		marker = true
	} else if int16(seq-a.first) < 0 {
		return 0, 0, false, false
	}
	outSeq, outTS = seq+a.seqOff, ts+a.tsOff
	if !a.started || int16(outSeq-a.lastSeq) > 0 {
		a.lastSeq = outSeq
	}
	if !a.started || int32(outTS-a.lastTS) > 0 {
		a.lastTS, a.lastAt = outTS, now
	}
	a.started = true
	return outSeq, outTS, marker, true
}

// Before is how many packets of the current source's epoch precede seq
// (a packet Next took).
func (a *AudioSlot) Before(seq uint16) int { return int(int16(seq - a.first)) }
