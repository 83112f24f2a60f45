package metrics

import (
	"runtime"
	rm "runtime/metrics"
)

// gcPauseBounds are the buckets go_gc_pause_seconds is reported in.
var gcPauseBounds = []float64{25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 1}

var runtimeSamples = []string{
	"/sched/pauses/total/gc:seconds",
	"/gc/cycles/total:gc-cycles",
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/total:bytes",
}

// WriteRuntime writes the Go runtime's families: goroutines, GC pauses (a
// histogram), GC cycles, heap in use and memory obtained from the OS.
func WriteRuntime(w *Writer) {
	samples := make([]rm.Sample, len(runtimeSamples))
	for i, name := range runtimeSamples {
		samples[i].Name = name
	}
	rm.Read(samples)
	w.One("go_goroutines", Gauge, "Number of goroutines that currently exist.", float64(runtime.NumGoroutine()))
	w.Family("go_gc_pause_seconds", Histogram, "Stop-the-world pause times of the garbage collector.")
	w.Histogram("go_gc_pause_seconds", rebucket(samples[0].Value, gcPauseBounds))
	w.One("go_gc_cycles_total", Counter, "Completed garbage collection cycles.", uintValue(samples[1].Value))
	w.One("go_heap_objects_bytes", Gauge, "Memory occupied by live and not yet swept heap objects.", uintValue(samples[2].Value))
	w.One("go_memory_total_bytes", Gauge, "Memory mapped by the Go runtime.", uintValue(samples[3].Value))
	w.Family("go_info", Gauge, "Information about the Go environment.")
	w.Sample("go_info", 1, "version", runtime.Version())
}

func uintValue(v rm.Value) float64 {
	if v.Kind() == rm.KindUint64 {
		return float64(v.Uint64())
	}
	return 0
}

// rebucket folds the runtime's fine-grained histogram into bounds. A runtime
// bucket counts towards the first bound at or above its upper edge; the sum is
// estimated from bucket midpoints (the runtime keeps no exact sum).
func rebucket(v rm.Value, bounds []float64) Snapshot {
	s := Snapshot{Bounds: bounds, Counts: make([]uint64, len(bounds))}
	if v.Kind() != rm.KindFloat64Histogram {
		return s
	}
	h := v.Float64Histogram()
	for i, n := range h.Counts {
		if n == 0 {
			continue
		}
		lo, hi := h.Buckets[i], h.Buckets[i+1]
		s.Count += n
		mid := hi
		if lo > 0 && hi < 1e300 {
			mid = (lo + hi) / 2
		} else if lo > 0 {
			mid = lo
		}
		s.Sum += mid * float64(n)
		for j, b := range bounds {
			if hi <= b {
				s.Counts[j] += n
				break
			}
		}
	}
	return s
}
