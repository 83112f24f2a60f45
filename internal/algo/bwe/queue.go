package bwe

import (
	"math"
	"time"
)

// Standing queue detection. The delay gradient sees a queue grow, not a queue
// that stays full: behind a drop-tail bottleneck that we fill exactly, delay
// is high and flat and the only other signal is loss. So the one-way delay of
// each feedback's least delayed packet is compared with the least delay seen
// over the last few seconds; a queue of standingQueue or more, smoothed and
// in the latest feedback, lasting standingTime counts as overuse of a
// saturated path. A decrease restarts the wait: the queue needs time to drain.
const (
	standingQueue  = 30 * time.Millisecond
	standingTime   = time.Second
	queueSmoothing = 500 * time.Millisecond // time constant of the queue estimate
	baseSlots      = 10                     // one-second minima: the base is the least delay of the last 10 s
	baseSlotLength = time.Second
	clockJump      = 5 * time.Second // a larger change means the receiver's clock jumped
	drainedQueue   = 5 * time.Millisecond
)

type queueDetector struct {
	mins    [baseSlots]time.Duration // least one-way delay per second slot
	slot    int64                    // absolute index of the newest slot
	started bool
	since   time.Duration // when the queue became standing; -1: not standing
	last    time.Duration // time of the last observation
	queue   time.Duration // smoothed queue estimate
	sample  time.Duration // the last feedback's queue, unsmoothed
}

func newQueueDetector() queueDetector { return queueDetector{since: -1} }

func (q *queueDetector) reset() { *q = newQueueDetector() }

// decreased restarts the wait for a standing queue after a decrease, and
// doubles it: the smoothed queue lags the draining one.
func (q *queueDetector) decreased(now time.Duration) {
	q.since = now + standingTime
}

// base is the least one-way delay over the slots.
func (q *queueDetector) base() time.Duration {
	b := time.Duration(math.MaxInt64)
	for _, m := range q.mins {
		b = min(b, m)
	}
	return b
}

// observe takes the least one-way delay (arrival on the receiver's clock minus
// send time on ours; the clocks' offset cancels) among one feedback's packets,
// at time now, and reports whether a standing queue calls for a decrease.
func (q *queueDetector) observe(now, owd time.Duration) bool {
	s := int64(now / baseSlotLength)
	if !q.started {
		q.started, q.slot = true, s
		for i := range q.mins {
			q.mins[i] = time.Duration(math.MaxInt64)
		}
	}
	if b := q.base(); b != time.Duration(math.MaxInt64) && (owd-b > clockJump || b-owd > clockJump) {
		q.reset()
		return q.observe(now, owd)
	}
	if s-q.slot >= baseSlots || s < q.slot-baseSlots {
		for i := range q.mins {
			q.mins[i] = time.Duration(math.MaxInt64)
		}
		q.slot = s
	}
	for q.slot < s {
		q.slot++
		q.mins[slotIndex(q.slot)] = time.Duration(math.MaxInt64)
	}
	i := slotIndex(q.slot)
	q.mins[i] = min(q.mins[i], owd)
	sample := owd - q.base()
	q.sample = sample
	if q.last == 0 && q.queue == 0 {
		q.queue = sample
	} else {
		a := math.Min(float64(now-q.last)/float64(queueSmoothing), 1)
		q.queue += time.Duration(a * float64(sample-q.queue))
	}
	q.last = now
	if q.queue < standingQueue {
		q.since = -1
		return false
	}
	if q.since < 0 {
		q.since = now
		return false
	}
	// Decrease only while a queue is there now: the smoothed value lags a
	// queue that has just drained.
	if now-q.since >= standingTime && sample >= standingQueue/2 {
		q.since = now // the next decrease needs another standingTime of queue
		return true
	}
	return false
}

func slotIndex(s int64) int64 {
	i := s % baseSlots
	if i < 0 {
		i += baseSlots
	}
	return i
}
