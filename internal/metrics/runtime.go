package metrics

import (
	rm "runtime/metrics"

	"github.com/prometheus/client_golang/prometheus"
)

// legacyRuntime reports the Go runtime families Podium exported before it used
// client_golang, under their old names, for dashboards that use them. None
// clashes with the Go collector's names (NewRegistry would fail); go_goroutines
// and go_info, which did, now come from the Go collector.
type legacyRuntime struct{}

var (
	gcPauseDesc     = prometheus.NewDesc("go_gc_pause_seconds", "Stop-the-world pause times of the garbage collector (also go_gc_duration_seconds).", nil, nil)
	gcCyclesDesc    = prometheus.NewDesc("go_gc_cycles_total", "Completed garbage collection cycles.", nil, nil)
	heapObjectsDesc = prometheus.NewDesc("go_heap_objects_bytes", "Memory occupied by live and not yet swept heap objects.", nil, nil)
	memoryTotalDesc = prometheus.NewDesc("go_memory_total_bytes", "Memory mapped by the Go runtime.", nil, nil)
)

// gcPauseBounds are the buckets go_gc_pause_seconds is reported in.
var gcPauseBounds = []float64{25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 1}

var runtimeSamples = []string{
	"/sched/pauses/total/gc:seconds",
	"/gc/cycles/total:gc-cycles",
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/total:bytes",
}

func (legacyRuntime) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{gcPauseDesc, gcCyclesDesc, heapObjectsDesc, memoryTotalDesc} {
		ch <- d
	}
}

func (legacyRuntime) Collect(ch chan<- prometheus.Metric) {
	samples := make([]rm.Sample, len(runtimeSamples))
	for i, name := range runtimeSamples {
		samples[i].Name = name
	}
	rm.Read(samples)
	count, sum, buckets := rebucket(samples[0].Value, gcPauseBounds)
	ch <- prometheus.MustNewConstHistogram(gcPauseDesc, count, sum, buckets)
	ch <- prometheus.MustNewConstMetric(gcCyclesDesc, prometheus.CounterValue, uintValue(samples[1].Value))
	ch <- prometheus.MustNewConstMetric(heapObjectsDesc, prometheus.GaugeValue, uintValue(samples[2].Value))
	ch <- prometheus.MustNewConstMetric(memoryTotalDesc, prometheus.GaugeValue, uintValue(samples[3].Value))
}

func uintValue(v rm.Value) float64 {
	if v.Kind() == rm.KindUint64 {
		return float64(v.Uint64())
	}
	return 0
}

// rebucket folds the runtime's fine-grained histogram into bounds, returning
// the count, an estimated sum and the cumulative count at or below each bound.
// A runtime bucket counts towards the first bound at or above its upper edge;
// the sum is estimated from bucket midpoints (the runtime keeps no exact sum).
func rebucket(v rm.Value, bounds []float64) (count uint64, sum float64, cumulative map[float64]uint64) {
	counts := make([]uint64, len(bounds))
	cumulative = make(map[float64]uint64, len(bounds))
	if v.Kind() == rm.KindFloat64Histogram {
		h := v.Float64Histogram()
		for i, n := range h.Counts {
			if n == 0 {
				continue
			}
			lo, hi := h.Buckets[i], h.Buckets[i+1]
			count += n
			mid := hi
			if lo > 0 && hi < 1e300 {
				mid = (lo + hi) / 2
			} else if lo > 0 {
				mid = lo
			}
			sum += mid * float64(n)
			for j, b := range bounds {
				if hi <= b {
					counts[j] += n
					break
				}
			}
		}
	}
	var cum uint64
	for i, b := range bounds {
		cum += counts[i]
		cumulative[b] = cum
	}
	return count, sum, cumulative
}
