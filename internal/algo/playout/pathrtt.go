package playout

import "time"

// pathSlots is how many minima PathRTT keeps over its window.
const pathSlots = 10

// PathRTT is the least round trip sampled over about the last window: the
// path's own round trip without a queue that drains at least once a window
// (BBR's min_rtt filter, without BBR's draining of the queue to see it). A
// long path, 300 ms each way, has no sample below its 600 ms. Behind a
// 128 kb/s cap the queue stood through the whole 30 s (300 ms of ICE RTT on
// a path of a few ms), and the least of 10 s rose to it there: 450 ms asked
// instead of 500–650 (docs/adaptation.md).
//
// It keeps the least sample of each of pathSlots slots of window/pathSlots,
// so the minimum covers between window less a slot and window, in fixed
// memory. The owner passes the time in.
type PathRTT struct {
	slot    time.Duration
	origin  time.Time
	started bool
	last    int64 // latest slot observed, from origin
	slots   [pathSlots]struct {
		n     int64 // slot number from origin, plus one; 0: empty
		least time.Duration
	}
}

// NewPathRTT returns a tracker over window that has seen nothing.
func NewPathRTT(window time.Duration) PathRTT {
	return PathRTT{slot: max(window/pathSlots, time.Nanosecond)}
}

// slotAt is the slot number of now; a clock that stepped back stays in the
// latest slot.
func (p *PathRTT) slotAt(now time.Time) int64 {
	return max(int64(now.Sub(p.origin)/p.slot), p.last)
}

// Observe takes a round-trip sample; 0 or less (unknown) is ignored.
func (p *PathRTT) Observe(now time.Time, rtt time.Duration) {
	if rtt <= 0 {
		return
	}
	if !p.started {
		p.started, p.origin = true, now
	}
	n := p.slotAt(now)
	p.last = n
	s := &p.slots[n%pathSlots]
	if s.n != n+1 || rtt < s.least {
		s.n, s.least = n+1, rtt
	}
}

// Least is the least sample of the window up to now, 0 if none was taken in
// it.
func (p *PathRTT) Least(now time.Time) time.Duration {
	if !p.started {
		return 0
	}
	n := p.slotAt(now)
	var least time.Duration
	for _, s := range p.slots {
		if s.n == 0 || s.n-1 <= n-pathSlots {
			continue
		}
		if least == 0 || s.least < least {
			least = s.least
		}
	}
	return least
}
