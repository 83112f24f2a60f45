package bwe

import "time"

// sent is what we remember of one packet until its feedback arrives.
type sent struct {
	seq      int64         // unwrapped transport-wide sequence; a slot holds one packet at a time
	at       time.Duration // send time since the estimator's epoch
	arrival  time.Duration // receiver's clock, when received
	size     int32
	cluster  int32 // probe cluster the packet was sent during; 0: none
	probe    bool  // padding or RTX sent to probe
	reported bool  // feedback about it was seen
	received bool
}

// history is a ring of the last sent packets indexed by sequence number.
type history struct {
	slots []sent
	mask  int64
	last  int64 // unwrapped sequence of the newest packet; -1 before the first
}

func newHistory(size int) history {
	n := 64
	for n < size {
		n <<= 1
	}
	h := history{slots: make([]sent, n), mask: int64(n - 1), last: -1}
	for i := range h.slots {
		h.slots[i].seq = -1
	}
	return h
}

// newest returns the unwrapped sequence of the newest packet.
func (h *history) newest() int64 { return h.last }

// slot returns the packet with unwrapped sequence ext, or nil if it is gone.
func (h *history) slot(ext int64) *sent {
	if ext < 0 {
		return nil
	}
	s := &h.slots[ext&h.mask]
	if s.seq != ext {
		return nil
	}
	return s
}

// add records a sent packet and returns its slot.
func (h *history) add(seq uint16) *sent {
	var ext int64
	if h.last < 0 {
		ext = 1<<16 + int64(seq) // room below for late feedback arithmetic
	} else {
		ext = h.last + int64(int16(seq-uint16(h.last)))
	}
	if ext > h.last {
		h.last = ext
	}
	s := &h.slots[ext&h.mask]
	*s = sent{seq: ext}
	return s
}

// get returns the packet with this sequence among the recent ones, or nil.
// Sequences are unwrapped backwards from the newest sent packet: feedback
// only reports packets we sent.
func (h *history) get(seq uint16) *sent {
	if h.last < 0 {
		return nil
	}
	ext := h.last - int64(uint16(uint16(h.last)-seq))
	s := &h.slots[ext&h.mask]
	if s.seq != ext {
		return nil
	}
	return s
}
