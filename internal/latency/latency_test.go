package latency

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestBucketsCoverTheRangeInOrder(t *testing.T) {
	prevHi := time.Duration(0)
	for i := 0; i < numBuckets; i++ {
		lo, hi := bounds(i)
		if lo != prevHi {
			t.Fatalf("bucket %d starts at %v, the previous ended at %v", i, lo, prevHi)
		}
		if hi <= lo {
			t.Fatalf("bucket %d is empty: [%v, %v)", i, lo, hi)
		}
		if got := bucketOf(lo); got != i {
			t.Fatalf("bucketOf(%v) = %d, want %d", lo, got, i)
		}
		if got := bucketOf(hi - 1); got != i {
			t.Fatalf("bucketOf(%v) = %d, want %d", hi-1, got, i)
		}
		prevHi = hi
	}
	if got := bucketOf(time.Duration(1) << 62); got != numBuckets-1 {
		t.Errorf("a huge duration lands in bucket %d, want the last", got)
	}
	if got := bucketOf(-time.Second); got != 0 {
		t.Errorf("a negative duration lands in bucket %d, want 0", got)
	}
}

func TestQuantilesWithinBucketError(t *testing.T) {
	var h Histogram
	rng := rand.New(rand.NewPCG(1, 2))
	var all []time.Duration
	for range 100000 {
		d := time.Duration(rng.ExpFloat64() * float64(50*time.Microsecond))
		all = append(all, d)
		h.Record(d)
	}
	slices.Sort(all)
	s := h.Snapshot()
	if s.Count() != uint64(len(all)) {
		t.Fatalf("count %d, want %d", s.Count(), len(all))
	}
	for _, q := range []float64{0.5, 0.9, 0.99, 0.999} {
		want := all[int(q*float64(len(all)))-1]
		got := s.Quantile(q)
		if diff := float64(got-want) / float64(want); diff > 0.07 || diff < -0.07 {
			t.Errorf("p%v = %v, exact %v (%.1f%% off)", q*100, got, want, diff*100)
		}
	}
	if s.Max() < all[len(all)-1] {
		t.Errorf("max %v below the largest recorded %v", s.Max(), all[len(all)-1])
	}
}

func TestSubIsTheWindow(t *testing.T) {
	var h Histogram
	for range 10 {
		h.Record(time.Millisecond)
	}
	before := h.Snapshot()
	for range 5 {
		h.Record(time.Microsecond)
	}
	w := h.Snapshot().Sub(before)
	if w.Count() != 5 {
		t.Fatalf("window holds %d, want 5", w.Count())
	}
	if p := w.Quantile(1); p < time.Microsecond || p > 1100*time.Nanosecond {
		t.Errorf("window max quantile %v, want about 1µs", p)
	}
	if (Snapshot{}).Quantile(0.5) != 0 || (Snapshot{}).Max() != 0 {
		t.Error("an empty snapshot should report zeros")
	}
}

func TestRecordDoesNotAllocate(t *testing.T) {
	var h Histogram
	if a := testing.AllocsPerRun(1000, func() { h.Record(1234 * time.Nanosecond) }); a != 0 {
		t.Errorf("%v allocations per Record", a)
	}
}

func BenchmarkRecord(b *testing.B) {
	var h Histogram
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		d := time.Duration(0)
		for pb.Next() {
			d += 997
			h.Record(d & 0xfffff)
		}
	})
}
