package metrics

import (
	"math"
	"slices"
	"sync/atomic"
)

// Hist is a cumulative histogram safe for concurrent Observe calls: no lock, no
// allocation.
type Hist struct {
	bounds []float64 // upper bounds, ascending
	counts []atomic.Uint64
	count  atomic.Uint64
	sum    atomic.Uint64 // float64 bits
}

// NewHist makes a histogram with these ascending upper bounds (+Inf is implied).
func NewHist(bounds ...float64) *Hist {
	b := slices.Clone(bounds)
	slices.Sort(b)
	return &Hist{bounds: b, counts: make([]atomic.Uint64, len(b))}
}

// Observe adds one value.
func (h *Hist) Observe(v float64) {
	if i, _ := slices.BinarySearch(h.bounds, v); i < len(h.bounds) {
		h.counts[i].Add(1)
	}
	for {
		old := h.sum.Load()
		if h.sum.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			break
		}
	}
	h.count.Add(1)
}

// Snapshot is a histogram's state: Counts[i] are the observations in
// (Bounds[i-1], Bounds[i]] (not cumulative); Count includes those above the last bound.
type Snapshot struct {
	Bounds []float64
	Counts []uint64
	Count  uint64
	Sum    float64
}

// Snapshot reads the histogram. Concurrent observations may be half counted
// (in Count but not yet in a bucket); Count is read first so it never exceeds
// what the buckets show by more than the observations in flight.
func (h *Hist) Snapshot() Snapshot {
	s := Snapshot{Bounds: h.bounds, Counts: make([]uint64, len(h.bounds)), Sum: math.Float64frombits(h.sum.Load())}
	s.Count = h.count.Load()
	var inBuckets uint64
	for i := range h.counts {
		s.Counts[i] = h.counts[i].Load()
		inBuckets += s.Counts[i]
	}
	s.Count = max(s.Count, inBuckets)
	return s
}
