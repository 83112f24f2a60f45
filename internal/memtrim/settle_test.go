package memtrim

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func TestSettlerTrimsOnceABurstHasSettled(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	const MB = 1 << 20
	for _, c := range []struct {
		name  string
		steps []sample
		want  []bool
	}{
		{"a burst, then quiet: trims at the first quiet check",
			[]sample{{at(0), 20 * MB, 10 * MB, 0}, {at(5), 30 * MB, 12 * MB, 40 * MB}, {at(10), 30 * MB, 12 * MB, 40*MB + 200<<10}},
			[]bool{false, false, true}},
		{"little excess: not worth it",
			[]sample{{at(0), 14 * MB, 12 * MB, 0}, {at(5), 15 * MB, 12 * MB, 1 << 10}},
			[]bool{false, false}},
		{"allocating fast enough to refill the excess within a minute",
			[]sample{{at(0), 30 * MB, 12 * MB, 0}, {at(5), 30 * MB, 12 * MB, 2 * MB}}, // 0.4 MB/s × 60 s > 18 MB
			[]bool{false, false}},
		{"trims at most every minGap",
			[]sample{{at(0), 30 * MB, 12 * MB, 0}, {at(5), 30 * MB, 12 * MB, 0}, {at(10), 30 * MB, 12 * MB, 0}, {at(35), 30 * MB, 12 * MB, 0}},
			[]bool{false, true, false, true}},
		{"a clock that did not move decides nothing",
			[]sample{{at(5), 30 * MB, 12 * MB, 0}, {at(5), 30 * MB, 12 * MB, 0}},
			[]bool{false, false}},
	} {
		var s settler
		for i, smp := range c.steps {
			if got := s.due(smp); got != c.want[i] {
				t.Errorf("%s: step %d due = %v, want %v", c.name, i, got, c.want[i])
			}
		}
	}
}

var sink []byte

// readSample sees garbage as held beyond the live heap, and a collection
// with the free pages returned takes it back.
func TestReadSampleSeesGarbage(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1)) // as in a quiet server: no collection comes by itself
	runtime.GC()
	before := readSample(time.Now())
	for range 64 {
		sink = make([]byte, 1<<20)
	}
	sink = nil
	during := readSample(time.Now())
	if during.allocs-before.allocs < 64<<20 {
		t.Errorf("allocs grew by %d, want ≥ 64 MiB", during.allocs-before.allocs)
	}
	if during.held < during.live+minExcess {
		t.Errorf("held %d, live %d: the garbage is not seen", during.held, during.live)
	}
	trimHeap()
	after := readSample(time.Now())
	if after.held > during.held-64<<20 {
		t.Errorf("held %d → %d: nothing returned", during.held, after.held)
	}
	t.Logf("held %.1f → %.1f MB, live %.1f MB", mb(during.held), mb(after.held), mb(after.live))
}
