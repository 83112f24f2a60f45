package bench

import (
	"math"
	"runtime/metrics"
)

// gcStops follows how long the GCs took to stop the world
// (/sched/pauses/stopping/gc:seconds) between two reports: a pause that is
// mostly this was spent waiting for running threads to reach a safe point —
// a raw system call under way, or a thread the operating system had
// descheduled — not on the collector's own work.
type gcStops struct {
	sample [1]metrics.Sample
	counts []uint64
}

// maxSince is the upper bound of the longest stop since the previous call's
// histogram bucket (0 when none, or the runtime lacks the metric).
func (g *gcStops) maxSince() float64 {
	if g.sample[0].Name == "" {
		g.sample[0].Name = "/sched/pauses/stopping/gc:seconds"
	}
	metrics.Read(g.sample[:])
	if g.sample[0].Value.Kind() != metrics.KindFloat64Histogram {
		return 0
	}
	h := g.sample[0].Value.Float64Histogram()
	longest := 0.0
	for i, c := range h.Counts {
		if i < len(g.counts) && c <= g.counts[i] || i >= len(g.counts) && c == 0 {
			continue
		}
		if hi := h.Buckets[i+1]; !math.IsInf(hi, 1) {
			longest = hi
		} else {
			longest = h.Buckets[i]
		}
	}
	g.counts = append(g.counts[:0], h.Counts...)
	return longest
}
