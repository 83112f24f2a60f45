// Package sim is a deterministic, simulated-time test bench for bandwidth
// estimation and layer allocation: a link emulator (capacity changing over
// time, drop-tail queue, propagation delay, jitter, random and bursty loss,
// all from a seeded generator), an SFU-like sender forwarding simulcast video
// at the allocator's choice plus probe padding, and a receiver returning
// transport-wide feedback. Nothing sleeps; a 60 s scenario runs in well under
// a second. The tests in this package assert the targets; tools/bwesim prints
// the figures and draws the plots in docs/.
package sim

import (
	"math/rand"
	"time"
)

// Step sets the link capacity from At on (bits per second).
type Step struct {
	At  time.Duration
	Bps int
}

// link is one direction of a bottleneck: a FIFO served at the capacity of the
// moment, dropping packets that would wait longer than queue, then a path with
// propagation delay, jitter (order kept) and loss.
type link struct {
	steps    []Step
	queue    time.Duration
	delay    time.Duration
	jitter   time.Duration
	loss     float64 // long-run loss probability
	burstLen float64 // mean burst length in packets; <= 1: independent losses
	rng      *rand.Rand

	busy time.Duration // when the bottleneck finishes its queue
	last time.Duration // latest arrival handed out, to keep order
	bad  bool          // Gilbert–Elliott state

	drops, losses, delivered int
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

// queueDelay is how long a packet sent at t would wait before transmission.
func (l *link) queueDelay(t time.Duration) time.Duration {
	return max(l.busy-t, 0)
}

// send puts a packet of size bytes on the link at t and returns its arrival
// time, or false if the queue dropped it or the path lost it.
func (l *link) send(t time.Duration, size int) (time.Duration, bool) {
	start := max(t, l.busy)
	if start-t > l.queue {
		l.drops++
		return 0, false
	}
	tx := time.Duration(float64(size*8) / float64(l.capacity(t)) * float64(time.Second))
	l.busy = start + tx
	if l.lost() {
		l.losses++
		return 0, false
	}
	arr := l.busy + l.delay
	if l.jitter > 0 {
		arr += time.Duration(l.rng.Int63n(int64(l.jitter)))
	}
	arr = max(arr, l.last)
	l.last = arr
	l.delivered++
	return arr, true
}

// lost draws the path loss: independent with probability loss, or a
// Gilbert–Elliott chain with the same long-run rate and mean burst burstLen.
func (l *link) lost() bool {
	if l.loss <= 0 {
		return false
	}
	if l.burstLen <= 1 {
		return l.rng.Float64() < l.loss
	}
	if l.bad {
		if l.rng.Float64() < 1/l.burstLen {
			l.bad = false
		}
	} else if l.rng.Float64() < l.loss/(l.burstLen*(1-l.loss)) {
		l.bad = true
	}
	return l.bad
}
