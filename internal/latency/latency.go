// Package latency is a fixed-size histogram of durations that the per-packet path
// can feed: Record neither allocates nor locks (one atomic add), and any number of
// goroutines may record while another reads.
//
// Buckets are log-linear: exact below 16 ns, then 16 buckets per power of two, so
// a quantile is within 1/16 (6.25 %) of the true value. The range ends at 2^40 ns
// (about 18 minutes); longer durations land in the last bucket.
package latency

import (
	"math/bits"
	"sync/atomic"
	"time"
)

const (
	subBits    = 4
	sub        = 1 << subBits // buckets per power of two
	maxExp     = 40
	numBuckets = (maxExp-subBits+1)*sub + sub
)

// Histogram counts durations. The zero value is empty and ready to use.
type Histogram struct {
	counts [numBuckets]atomic.Uint64
}

// Record adds one duration; negative durations count as zero.
func (h *Histogram) Record(d time.Duration) {
	h.counts[bucketOf(d)].Add(1)
}

// Snapshot copies the counts. Recording may go on meanwhile; each bucket is read
// atomically, the set of buckets is not.
func (h *Histogram) Snapshot() Snapshot {
	var s Snapshot
	s.Counts = make([]uint64, numBuckets)
	for i := range h.counts {
		s.Counts[i] = h.counts[i].Load()
	}
	return s
}

func bucketOf(d time.Duration) int {
	if d < sub {
		return int(max(d, 0))
	}
	v := uint64(d)
	e := bits.Len64(v) - 1 // ≥ subBits
	if e > maxExp {
		return numBuckets - 1
	}
	return (e-subBits+1)*sub + int(v>>(e-subBits))&(sub-1)
}

// bounds returns bucket i's smallest duration and the smallest of the next bucket.
func bounds(i int) (lo, hi time.Duration) {
	if i < sub {
		return time.Duration(i), time.Duration(i + 1)
	}
	e := i/sub + subBits - 1
	m := i % sub
	lo = time.Duration(uint64(sub+m) << (e - subBits))
	hi = time.Duration(uint64(sub+m+1) << (e - subBits))
	return lo, hi
}

// Snapshot is a copy of a Histogram's counts, plain data that can be sent as JSON
// and subtracted to get the durations recorded between two snapshots.
type Snapshot struct {
	Counts []uint64 `json:"counts"`
}

// Count is the number of recorded durations.
func (s Snapshot) Count() uint64 {
	var n uint64
	for _, c := range s.Counts {
		n += c
	}
	return n
}

// Sub returns the durations recorded after earlier was taken (s − earlier).
func (s Snapshot) Sub(earlier Snapshot) Snapshot {
	out := Snapshot{Counts: make([]uint64, len(s.Counts))}
	for i, c := range s.Counts {
		if i < len(earlier.Counts) && earlier.Counts[i] <= c {
			c -= earlier.Counts[i]
		}
		out.Counts[i] = c
	}
	return out
}

// Quantile returns the duration below which a fraction q (0..1) of the recorded
// durations fall, interpolated inside the bucket; 0 when nothing was recorded.
func (s Snapshot) Quantile(q float64) time.Duration {
	total := s.Count()
	if total == 0 {
		return 0
	}
	q = min(max(q, 0), 1)
	rank := q * float64(total)
	var seen float64
	for i, c := range s.Counts {
		if c == 0 {
			continue
		}
		if seen+float64(c) >= rank {
			lo, hi := bounds(i)
			frac := (rank - seen) / float64(c)
			return lo + time.Duration(frac*float64(hi-lo))
		}
		seen += float64(c)
	}
	_, hi := bounds(len(s.Counts) - 1)
	return hi
}

// Max returns the upper bound of the highest non-empty bucket (0 when empty).
func (s Snapshot) Max() time.Duration {
	for i := len(s.Counts) - 1; i >= 0; i-- {
		if s.Counts[i] != 0 {
			_, hi := bounds(i)
			return hi
		}
	}
	return 0
}
