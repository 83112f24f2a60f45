package bwe

import (
	"math"
	"time"
)

// Coexistence with loss-based flows (issue 22). A delay-based estimator backs
// off whenever the queue grows; a loss-based flow (TCP CUBIC, BBR v1 in
// practice) then fills the queue it left, and the estimate starves. The
// competition detector notices that the queue is driven by flows that do not
// back off: the queuing delay (one-way delay above the least seen over the
// last two minutes) did not fall below competeQueue for competeHold, although
// we decreased at least competeDecreases times meanwhile and our media rate
// fell to competeSendDrop of what it was when the queue rose, while the path
// delivers at least competeDelivered of what we send at the rate we send it.
// Our own overshoot does not look like that: a decrease below the path's rate
// drains the queue that we alone filled within a second or two; when our rate
// cannot fall (the lowest layers fill the link) the rate condition fails; and
// a queue we keep full alone delivers less than we send. Below competeMinSend
// it never starts: there the lowest layers alone can fill a slow link (at a
// 128 kb/s cap the browser test entered it after the switch down, the queue
// grew to 250 ms and the video froze 3.2 s), and there is no layer to win back.
//
// In competitive mode the delay signals (trend overuse, standing queue) are
// ignored and the estimate holds its share on loss instead, like the flows it
// shares the queue with: it grows (multiplicatively, 8 % per second, as far
// from convergence, and beyond the application-limited cap towards what the
// held-back layers would take, SetWanted, so that the allocator can take back
// the layers the delay mode gave up) while the loss fraction stays below
// LossLow; each loss window between LossLow and LossHigh cuts it by β but not
// below the media the path delivers to us, the share we hold (loss.go); above
// LossHigh the usual loss cut applies, and from the second such window in a
// row the TCP-friendly rate (many flows). It returns to delay mode when the
// queue drains: its least value over the last competeDrainSlot falls below
// competeDrained, because the other flows stopped or because our own loss
// cut emptied a queue we alone were filling.
//
// In either mode, a queue that stood competeHold or longer and is gone within
// competeClearIn while our rate holds says the flows that filled it stopped
// (cleared): the estimator forgets the probes' back-off, the loss state and
// the last decrease they left, and probes at once.
const (
	competeQueue     = 20 * time.Millisecond // a queue that never fell below this…
	competeHold      = 3 * time.Second       // …for this long, although we decreased
	competeDecreases = 2                     // at least this many times
	competeSendDrop  = 0.85                  // and our media rate fell to this share of what it was
	competeDrained   = 10 * time.Millisecond // the queue fell below this: back to delay mode
	competeDrainSlot = 500 * time.Millisecond
	competeSendWin   = 750 * time.Millisecond // media rate window for the send-rate comparison
	competeDelivered = 0.95                   // and the path delivers this share of what we send
	competeMinSend   = 300_000                // and we still send this much (bits/s)
	competeClearIn   = 300 * time.Millisecond // a standing queue gone within this: the flows that filled it stopped

	longBaseSlots  = 24 // the base one-way delay is the least of the last 24 × 5 s
	longBaseLength = 5 * time.Second
)

// competeDetector decides between delay mode and competitive mode.
type competeDetector struct {
	base      [longBaseSlots]time.Duration // least one-way delay per slot
	baseSlot  int64
	started   bool
	queue     time.Duration // the latest feedback's queuing delay over the long base
	slotMin   time.Duration // least queue in the current drain slot
	slotStart time.Duration

	undrained  bool          // the queue has stayed above competeQueue since undrainedAt
	since      time.Duration // …since then
	decreases  int           // decreases since then
	sendBefore float64       // our media rate when the queue rose (bits/s)

	// cleared: a queue that stood competeHold or longer has drained (the
	// flows that kept it full stopped); the estimator takes it and resets it.
	cleared   bool
	stood     bool          // a queue stood competeHold and fell below competeQueue at stoodEnd
	stoodEnd  time.Duration //
	stoodOn   bool          // …while in competitive mode
	sendSlots [2]float64    // our media rate at the last two drain-slot ends

	on                bool
	onSince           time.Duration
	entries, drainOut int // times entered and left (for Stats)
}

func newCompeteDetector() competeDetector { return competeDetector{slotMin: math.MaxInt64} }

func (c *competeDetector) longBase() time.Duration {
	b := time.Duration(math.MaxInt64)
	for _, m := range c.base {
		b = min(b, m)
	}
	return b
}

// observe takes one feedback's least one-way delay and our current media send
// rate, and reports whether competitive mode is on afterwards.
func (c *competeDetector) observe(now, owd time.Duration, send float64) bool {
	s := int64(now / longBaseLength)
	if !c.started || s-c.baseSlot >= longBaseSlots || s < c.baseSlot {
		on, entries, out := c.on, c.entries, c.drainOut
		*c = newCompeteDetector()
		c.on, c.entries, c.drainOut = on, entries, out
		c.started, c.baseSlot = true, s
		for i := range c.base {
			c.base[i] = math.MaxInt64
		}
		c.slotStart = now
	}
	if b := c.longBase(); b != math.MaxInt64 && (owd-b > clockJump || b-owd > clockJump) {
		// The receiver's clock jumped: start over, in delay mode.
		entries, out := c.entries, c.drainOut
		*c = newCompeteDetector()
		c.entries, c.drainOut = entries, out
		return c.observe(now, owd, send)
	}
	for c.baseSlot < s {
		c.baseSlot++
		c.base[slotIndexN(c.baseSlot, longBaseSlots)] = math.MaxInt64
	}
	i := slotIndexN(c.baseSlot, longBaseSlots)
	c.base[i] = min(c.base[i], owd)
	q := owd - c.longBase()
	c.queue = q

	// The drain check: the least queue over each competeDrainSlot.
	wasOn := c.on
	c.slotMin = min(c.slotMin, q)
	if now-c.slotStart >= competeDrainSlot {
		drained := c.slotMin < competeDrained
		c.slotMin, c.slotStart = math.MaxInt64, now
		c.sendSlots[1], c.sendSlots[0] = c.sendSlots[0], send
		if c.on && drained {
			c.on = false
			c.drainOut++
		}
	}

	if q < competeQueue {
		if c.undrained && now-c.since >= competeHold {
			c.stood, c.stoodEnd, c.stoodOn = true, now, wasOn
		}
		// A queue that stood for seconds and is then gone within
		// competeClearIn, while we kept sending as before: the others
		// left. Our own rate falling (a decrease, a lower layer) drains a
		// queue too, and a queue we fill ourselves comes and goes. Not
		// one that stood in competitive mode, which our decreases did not
		// relieve: there our rate wavers with the lowest layers' frames
		// (a seed of the simulation's staggered pattern, and browser run
		// K, missed the reset on that and took 10–32 s to come back).
		if c.stood && now-c.stoodEnd > competeClearIn {
			c.stood = false
		}
		if c.stood && q < competeDrained && (c.stoodOn || send >= competeSendDrop*max(c.sendSlots[0], c.sendSlots[1])) {
			c.stood, c.cleared = false, true
		}
		c.undrained = false
		return c.on
	}
	if !c.undrained {
		c.undrained, c.since, c.decreases, c.sendBefore = true, now, 0, send
		return c.on
	}
	c.sendBefore = math.Max(c.sendBefore, send)
	return c.on
}

// ready reports whether the queue has stayed although we decreased and our
// rate fell: the conditions for competitive mode that the delay trace gives.
// The estimator adds the last one, that the path delivers what we send
// (Estimator.delivered ≥ competeDelivered): alone, a queue that stays means
// we still send more than the path carries, and it delivers less.
func (c *competeDetector) ready(now time.Duration, send float64) bool {
	return !c.on && c.undrained && now-c.since >= competeHold && c.decreases >= competeDecreases &&
		send <= competeSendDrop*c.sendBefore && send >= competeMinSend
}

func (c *competeDetector) enter(now time.Duration) {
	c.on, c.onSince = true, now
	c.entries++
}

// decreased counts a decrease of ours while the queue stays.
func (c *competeDetector) decreased() {
	if c.undrained {
		c.decreases++
	}
}

func slotIndexN(s, n int64) int64 {
	i := s % n
	if i < 0 {
		i += n
	}
	return i
}
