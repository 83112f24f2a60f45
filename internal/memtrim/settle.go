package memtrim

import (
	rm "runtime/metrics"
	"time"
)

const (
	// minExcess is the least garbage and free heap worth a collection and
	// the system calls that return it.
	minExcess = 4 << 20
	// refillHorizon: the heap is trimmed only when, at the allocation rate
	// of the last check, its excess would take longer than this to refill;
	// during a burst it would refill at once, and trimming would only cost.
	refillHorizon = time.Minute
	// minGap keeps trims apart in a server that allocates steadily.
	minGap = 30 * time.Second
)

// sample is what the settle check reads from the runtime.
type sample struct {
	at     time.Time
	held   uint64 // heap bytes resident: objects (live or not yet swept), fragments, free pages not returned
	live   uint64 // heap bytes the last collection marked live
	allocs uint64 // bytes allocated since the process started
}

// settler decides when a burst has settled and its heap is worth returning.
// Pure: it sees the runtime only through samples.
type settler struct {
	prev     sample
	lastTrim time.Time
}

// due records cur and reports whether to trim now: the heap holds at least
// minExcess beyond its live part, allocation since the previous sample would
// not refill that within refillHorizon, and the last trim is minGap ago.
func (s *settler) due(cur sample) bool {
	prev := s.prev
	s.prev = cur
	if prev.at.IsZero() || !cur.at.After(prev.at) || cur.held < cur.live+minExcess {
		return false
	}
	if !s.lastTrim.IsZero() && cur.at.Sub(s.lastTrim) < minGap {
		return false
	}
	excess := float64(cur.held - cur.live)
	rate := float64(cur.allocs-prev.allocs) / cur.at.Sub(prev.at).Seconds() // bytes per second
	if rate*refillHorizon.Seconds() >= excess {
		return false
	}
	s.lastTrim = cur.at
	return true
}

var sampleNames = []string{
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/unused:bytes",
	"/memory/classes/heap/free:bytes", // free and still resident (released pages are another class)
	"/gc/heap/live:bytes",
	"/gc/heap/allocs:bytes",
}

// readSample reads the runtime's memory classes; runtime/metrics does not
// stop the world.
func readSample(at time.Time) sample {
	var ss [5]rm.Sample
	for i, n := range sampleNames {
		ss[i].Name = n
	}
	rm.Read(ss[:])
	v := func(i int) uint64 {
		if ss[i].Value.Kind() == rm.KindUint64 {
			return ss[i].Value.Uint64()
		}
		return 0
	}
	return sample{at: at, held: v(0) + v(1) + v(2), live: v(3), allocs: v(4)}
}
