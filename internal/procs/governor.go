// Package procs sizes the Go runtime's processors (GOMAXPROCS) to the work
// the server has, up to the cores it may use.
//
// A forwarding server is mostly asleep between bursts of packets. With a
// second processor idle, every goroutine made runnable (a socket's reader
// woken by the poller, a clock's tick) also wakes a spinning thread that
// looks for work and finds none, and the collector's stop-the-world pauses
// are longer: in meeting-8 about 1 ms with two processors and about 0.1 ms
// with one, CPU per packet within the spread (docs/performance.md,
// "processors sized to the work"). So the server runs on as few processors
// as keep each about half busy, adds one at once when they are busier than
// that, and gives one back only after a quiet spell, so that a burst of
// joins (DTLS handshakes) never waits on a single busy processor for long.
package procs

import (
	"math"
	"time"
)

const (
	// busyShare is how busy, on average, the processors may be before the
	// governor adds one: queueing behind other goroutines stays short.
	busyShare = 0.5
	// quietFor is how long the work must have fitted fewer processors
	// before one is given back.
	quietFor = 5 * time.Second
)

// governor decides the processors from the process's CPU time. Pure: time
// and CPU time come in as arguments.
type governor struct {
	limit   int // the most processors: the cores the process may use
	procs   int // the processors in force
	prevAt  time.Time
	prevCPU time.Duration
	// quietSince is when the samples began to fit fewer processors (zero:
	// they do not); fewest is the most any of them needed since.
	quietSince time.Time
	fewest     int
}

func newGovernor(limit, procs int) *governor {
	limit = max(limit, 1)
	return &governor{limit: limit, procs: min(max(procs, 1), limit)}
}

// next records the process's whole CPU time cpu at now and returns the
// processors to run with from now on.
func (g *governor) next(now time.Time, cpu time.Duration) int {
	prevAt, prevCPU := g.prevAt, g.prevCPU
	g.prevAt, g.prevCPU = now, cpu
	wall := now.Sub(prevAt)
	if prevAt.IsZero() || wall <= 0 || cpu < prevCPU {
		return g.procs
	}
	used := float64(cpu-prevCPU) / float64(wall) // cores
	need := min(max(int(math.Ceil(used/busyShare)), 1), g.limit)
	switch {
	case need > g.procs:
		g.procs, g.quietSince = need, time.Time{}
	case need == g.procs:
		g.quietSince = time.Time{}
	case g.quietSince.IsZero():
		g.quietSince, g.fewest = now, need
	default:
		g.fewest = max(g.fewest, need)
		if now.Sub(g.quietSince) >= quietFor {
			g.procs, g.quietSince = g.fewest, time.Time{}
		}
	}
	return g.procs
}
