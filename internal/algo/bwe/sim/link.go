// Package sim is a deterministic, simulated-time test bench for bandwidth
// estimation and layer allocation: a link emulator (internal/netem's model:
// capacity changing over time, drop-tail queue, propagation delay, jitter,
// random and bursty loss, all from a seeded generator), an SFU-like sender
// forwarding simulcast video at the allocator's choice plus probe padding, and
// a receiver returning transport-wide feedback. Nothing sleeps; a 60 s
// scenario runs in well under a second. The tests in this package assert the
// targets; tools/bwesim prints the figures and draws the plots in docs/.
package sim

import (
	"time"

	"github.com/podium-sfu/podium/internal/netem"
)

// Step sets the link capacity from At on (bits per second).
type Step struct {
	At  time.Duration
	Bps int
}

// link is the bottleneck direction: netem's link, its capacity following the
// scenario's steps.
type link struct {
	*netem.Link
	steps []Step
}

func (l *link) capacity(t time.Duration) int {
	c := l.steps[0].Bps
	for _, s := range l.steps {
		if s.At <= t {
			c = s.Bps
		}
	}
	return c
}

// send puts a packet of size bytes on the link at t, at the capacity of t.
func (l *link) send(t time.Duration, size int) (time.Duration, bool) {
	l.SetRate(l.capacity(t))
	return l.Send(t, size)
}
