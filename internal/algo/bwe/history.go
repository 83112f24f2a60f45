package bwe

import "time"

// sent is what we remember of one packet until its feedback arrives: 32
// bytes, two to a cache line (every packet sent writes one; a 40-byte slot
// straddled two lines every other packet).
type sent struct {
	seq      int64         // unwrapped transport-wide sequence; a slot holds one packet at a time
	at       time.Duration // send time since the estimator's epoch
	arrival  time.Duration // receiver's clock, when received
	size     uint16        // bytes; a UDP payload is shorter
	cluster  uint16        // low bits of the probe cluster it was sent during; 0: none (ids of one history's span never wrap)
	probe    bool          // padding or RTX sent to probe
	reported bool          // feedback about it was seen
	received bool
}

// history is a ring of the last sent packets indexed by sequence number. It
// starts small and doubles, up to its largest size, while it would overwrite
// a packet sent less than historySpan before the one it adds, or one whose
// feedback has not come: an audio-only link's needs a few hundred slots, a
// 20 Mb/s link's thousands.
type history struct {
	slots []sent
	mask  int64
	last  int64 // unwrapped sequence of the newest packet; -1 before the first
	max   int   // slots it may grow to
}

const (
	historyStartSlots = 256
	// historySpan is how long a sent packet is kept for its feedback (and the
	// walks over recent packets) while the ring may still grow.
	historySpan = 2 * time.Second
)

// newHistory makes a history that grows to size slots, rounded up to a power of two.
func newHistory(size int) history {
	n := 64
	for n < size {
		n <<= 1
	}
	h := history{last: -1, max: n}
	h.resize(min(n, historyStartSlots))
	return h
}

// resize makes n slots and moves the packets held into them.
func (h *history) resize(n int) {
	old := h.slots
	h.slots, h.mask = make([]sent, n), int64(n-1)
	for i := range h.slots {
		h.slots[i].seq = -1
	}
	for _, s := range old {
		if s.seq >= 0 {
			h.slots[s.seq&h.mask] = s
		}
	}
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

// add records a packet sent at and returns its slot.
func (h *history) add(seq uint16, at time.Duration) *sent {
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
	for s.seq >= 0 && s.seq != ext && (at-s.at < historySpan || !s.reported) && len(h.slots) < h.max {
		h.resize(2 * len(h.slots))
		s = &h.slots[ext&h.mask]
	}
	*s = sent{seq: ext, at: at}
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
