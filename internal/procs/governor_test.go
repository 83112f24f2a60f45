package procs

import (
	"testing"
	"time"
)

// TestGovernorSizesProcessorsToTheWork feeds the governor CPU time as a
// server at a given load would use it, one reading every checkEvery.
func TestGovernorSizesProcessorsToTheWork(t *testing.T) {
	type phase struct {
		cores float64       // CPU used per second of wall time
		for_  time.Duration // how long
		want  int           // the processors at the phase's end
	}
	for _, c := range []struct {
		name   string
		limit  int
		phases []phase
	}{
		{"a light load drops to one processor, but only after quietFor", 2, []phase{
			{0.1, quietFor - checkEvery, 2},
			{0.1, 2 * checkEvery, 1},
			{0.1, time.Minute, 1},
		}},
		{"busier than half a processor: a second one at once", 2, []phase{
			{0.1, 20 * time.Second, 1},
			{0.6, checkEvery, 2},
		}},
		{"a short lull keeps the processors", 4, []phase{
			{1.8, 5 * time.Second, 4},
			{0.2, quietFor - checkEvery, 4},
			{1.8, checkEvery, 4},
		}},
		{"gives back down to the most any reading of the quiet spell needed", 8, []phase{
			{3.0, time.Second, 8}, // needs 6 of 8: the spell begins
			{0.9, 3 * time.Second, 8},
			{0.3, quietFor, 6},
			{0.3, quietFor + checkEvery, 1},
		}},
		{"never above the limit", 2, []phase{
			{5.0, time.Second, 2},
		}},
		{"one processor is all there is", 1, []phase{
			{0.9, time.Minute, 1},
		}},
	} {
		g := newGovernor(c.limit, c.limit)
		now, cpu := time.Unix(1000, 0), time.Duration(0)
		g.next(now, cpu)
		for i, p := range c.phases {
			var got int
			for end := now.Add(p.for_); now.Before(end); {
				now = now.Add(checkEvery)
				cpu += time.Duration(p.cores * float64(checkEvery))
				got = g.next(now, cpu)
			}
			if got != p.want {
				t.Errorf("%s: phase %d (%.1f cores for %v): %d processors, want %d", c.name, i, p.cores, p.for_, got, p.want)
			}
		}
	}
}

// A reading that goes back in time or sees CPU time shrink (a failed
// getrusage reads 0) changes nothing.
func TestGovernorIgnoresReadingsThatMakeNoSense(t *testing.T) {
	g := newGovernor(2, 2)
	t0 := time.Unix(1000, 0)
	g.next(t0, time.Second)
	for i, r := range []struct {
		at  time.Time
		cpu time.Duration
	}{
		{t0, 5 * time.Second},                   // no wall time
		{t0.Add(-time.Second), 9 * time.Second}, // back in time
		{t0.Add(time.Second), 0},                // CPU time went down
		{t0.Add(30 * time.Second), 0},           // still below the first
	} {
		if got := g.next(r.at, r.cpu); got != 2 {
			t.Errorf("reading %d: %d processors, want 2", i, got)
		}
	}
}
