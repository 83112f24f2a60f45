// Package netem emulates one network path in user space, since the kernels the
// tests run on lack netem: a pure, deterministic link model (Link: rate limit
// with a drop-tail queue, propagation delay, bounded jitter, random and bursty
// loss, all drawn from a seeded generator, time passed in) and a UDP relay
// (Relay) that puts a pair of them, one per direction, between a client and a
// target. internal/algo/bwe/sim runs the model in simulated time; tools/netem
// is the relay's command line; the browser tests start the relay in-process.
package netem

import (
	"fmt"
	"math/rand"
	"time"
)

// Config describes one direction of a path. The zero value passes everything
// at once.
type Config struct {
	// Rate is the bottleneck's capacity in bits per second; 0: unlimited (no
	// queue builds).
	Rate int
	// QueueTime and QueueBytes bound the bottleneck's FIFO (drop-tail): a
	// packet that would wait longer than QueueTime, or find QueueBytes or more
	// queued ahead of it, is dropped. 0: no bound of that kind. Without a
	// rate nothing queues.
	QueueTime  time.Duration
	QueueBytes int
	// Delay is added to every packet after the bottleneck (propagation).
	Delay time.Duration
	// Jitter adds a further delay drawn uniformly from [0, Jitter). Order is
	// kept unless Reorder is set (real jitter mostly keeps it: a packet can
	// only wait for the one ahead of it), so a packet is then held until the
	// one before it has arrived; its delay stays within Delay + Jitter. At
	// packet spacings well under Jitter, holding packets back shifts the
	// delays towards Delay + Jitter and the spread shrinks.
	Jitter  time.Duration
	Reorder bool
	// Loss is the long-run probability that the path loses a packet after the
	// bottleneck. BurstLen > 1 makes losses come in bursts of that mean length
	// (a two-state Gilbert–Elliott chain with the same long-run rate);
	// otherwise they are independent.
	Loss     float64
	BurstLen float64
}

// Validate reports a setting out of range.
func (c Config) Validate() error {
	switch {
	case c.Rate < 0:
		return fmt.Errorf("rate %d b/s is negative", c.Rate)
	case c.QueueTime < 0 || c.QueueBytes < 0:
		return fmt.Errorf("queue bound %v / %d bytes is negative", c.QueueTime, c.QueueBytes)
	case c.Delay < 0 || c.Jitter < 0:
		return fmt.Errorf("delay %v or jitter %v is negative", c.Delay, c.Jitter)
	case c.Loss < 0 || c.Loss >= 1:
		return fmt.Errorf("loss %v is outside [0, 1)", c.Loss)
	case c.BurstLen < 0:
		return fmt.Errorf("burst length %v is negative", c.BurstLen)
	}
	return nil
}

// Stats count what became of the packets sent.
type Stats struct {
	Delivered int // handed an arrival time
	Dropped   int // by the full queue
	Lost      int // by the path's loss
}

// Link is one direction of a path: a FIFO served at the rate of the moment,
// then a path with delay, jitter and loss. Times are offsets from any fixed
// origin the caller keeps; they must not go backwards. Not safe for
// concurrent use.
type Link struct {
	cfg Config
	rng *rand.Rand

	busy time.Duration // when the bottleneck finishes its queue
	last time.Duration // latest arrival handed out, to keep order
	bad  bool          // Gilbert–Elliott state

	stats Stats
}

// New returns a link drawing its randomness from rng, which it then owns.
func New(cfg Config, rng *rand.Rand) *Link {
	return &Link{cfg: cfg, rng: rng}
}

// SetRate changes the capacity from now on; packets already queued keep the
// transmission times they were given.
func (l *Link) SetRate(bps int) { l.cfg.Rate = bps }

// SetConfig changes every setting from now on, as SetRate does the rate: the
// queue, the order kept and the loss chain's state carry over.
func (l *Link) SetConfig(cfg Config) { l.cfg = cfg }

// Stats are the counts so far.
func (l *Link) Stats() Stats { return l.stats }

// QueueDelay is how long a packet sent at now would wait before transmission.
func (l *Link) QueueDelay(now time.Duration) time.Duration {
	return max(l.busy-now, 0)
}

// Send puts a packet of size bytes on the link at now and returns when it
// arrives at the far end, or false if the queue dropped it or the path lost it.
func (l *Link) Send(now time.Duration, size int) (time.Duration, bool) {
	start := now
	if l.cfg.Rate > 0 {
		start = max(now, l.busy)
		wait := start - now
		if l.cfg.QueueTime > 0 && wait > l.cfg.QueueTime ||
			l.cfg.QueueBytes > 0 && wait > 0 && bytesIn(wait, l.cfg.Rate)+size > l.cfg.QueueBytes {
			l.stats.Dropped++
			return 0, false
		}
		l.busy = start + time.Duration(float64(size*8)/float64(l.cfg.Rate)*float64(time.Second))
		start = l.busy
	}
	if l.lost() {
		l.stats.Lost++
		return 0, false
	}
	arr := start + l.cfg.Delay
	if l.cfg.Jitter > 0 {
		arr += time.Duration(l.rng.Int63n(int64(l.cfg.Jitter)))
	}
	if !l.cfg.Reorder {
		arr = max(arr, l.last)
		l.last = arr
	}
	l.stats.Delivered++
	return arr, true
}

// bytesIn is what the bottleneck transmits in d at bps: the bytes queued
// ahead of a packet that has to wait d.
func bytesIn(d time.Duration, bps int) int {
	return int(d.Seconds() * float64(bps) / 8)
}

// lost draws the path loss: independent with probability Loss, or a
// Gilbert–Elliott chain with the same long-run rate and mean burst BurstLen
// (good → bad with p = Loss / (BurstLen·(1−Loss)), bad → good with 1/BurstLen;
// every packet in the bad state is lost).
func (l *Link) lost() bool {
	if l.cfg.Loss <= 0 {
		return false
	}
	if l.cfg.BurstLen <= 1 {
		return l.rng.Float64() < l.cfg.Loss
	}
	if l.bad {
		if l.rng.Float64() < 1/l.cfg.BurstLen {
			l.bad = false
		}
	} else if l.rng.Float64() < l.cfg.Loss/(l.cfg.BurstLen*(1-l.cfg.Loss)) {
		l.bad = true
	}
	return l.bad
}
