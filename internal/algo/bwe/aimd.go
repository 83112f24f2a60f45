package bwe

import (
	"math"
	"time"
)

type rcState int8

const (
	rcHold rcState = iota
	rcIncrease
	rcDecrease
)

// Rate control constants (GCC draft §5.5, libwebrtc's AimdRateControl).
const (
	increaseFactor   = 1.08                   // multiplicative increase per second far from convergence
	minIncrease      = 1000.0                 // bits/s per update, at least
	minNearIncrease  = 4000.0                 // bits/s per second near convergence, at least
	appLimitedSlack  = 10_000.0               // bits/s added to the application-limited cap
	decreaseSlack    = 5_000.0                // bits/s taken off a decrease
	backoffDelay     = 100 * time.Millisecond // the detector's own delay, added to the RTT
	minReduceGap     = 10 * time.Millisecond
	maxReduceGap     = 200 * time.Millisecond
	capacityAlpha    = 0.05 // smoothing of the link capacity on overuse
	capacityProbe    = 0.5  // …and on a probe result
	capacityMinDev   = 0.4  // normalised deviation bounds (kb/s)
	capacityMaxDev   = 2.5
	capacityStdDevs  = 3
	packetBits       = 1200 * 8
	framesPerSecond  = 30
	defaultRTT       = 100 * time.Millisecond
	rttSmoothing     = 0.125
	maxRTTSample     = 10 * time.Second
	initialReduceGap = 200 * time.Millisecond
	appLimitedGap    = 500 * time.Millisecond // between decreases while the path delivers what we send
)

// linkCapacity remembers the throughput seen at overuse: the path's capacity.
// Near it the rate control increases additively, far from it multiplicatively.
type linkCapacity struct {
	kbps, dev float64 // estimate and normalised variance, in kb/s
	valid     bool
}

func (l *linkCapacity) update(bps, alpha float64) {
	k := bps / 1000
	if !l.valid {
		l.kbps, l.valid = k, true
	} else {
		l.kbps = (1-alpha)*l.kbps + alpha*k
	}
	e := l.kbps - k
	l.dev = (1-alpha)*l.dev + alpha*e*e/math.Max(l.kbps, 1)
	l.dev = math.Min(math.Max(l.dev, capacityMinDev), capacityMaxDev)
}

func (l *linkCapacity) std() float64 { return math.Sqrt(l.dev * l.kbps) }

func (l *linkCapacity) upper() float64 {
	if !l.valid {
		return math.Inf(1)
	}
	return (l.kbps + capacityStdDevs*l.std()) * 1000
}

func (l *linkCapacity) lower() float64 {
	if !l.valid {
		return 0
	}
	return math.Max(0, l.kbps-capacityStdDevs*l.std()) * 1000
}

// rateControl is the AIMD controller driven by the delay-based hypothesis.
type rateControl struct {
	estimate   float64 // bits/s
	min, max   float64
	beta       float64
	appRatio   float64
	state      rcState
	lastChange time.Duration
	changed    bool // lastChange is set
	capacity   linkCapacity

	lastDecrease  time.Duration
	decreasedOnce bool
}

func newRateControl(cfg Config) rateControl {
	return rateControl{
		estimate: float64(cfg.StartBitrate),
		min:      float64(cfg.MinBitrate),
		max:      float64(cfg.MaxBitrate),
		beta:     cfg.Beta,
		appRatio: cfg.AppLimitedRatio,
		state:    rcIncrease,
	}
}

func (r *rateControl) transition(u Usage, now time.Duration) {
	switch u {
	case Normal:
		if r.state == rcHold {
			r.state = rcIncrease
			r.lastChange, r.changed = now, true
		}
	case Overuse:
		r.state = rcDecrease
	case Underuse:
		r.state = rcHold
	}
}

// timeToReduce reports whether a further decrease is allowed: one RTT after the
// last decrease, or at once if the acknowledged rate collapsed below half the
// estimate. While the path delivers what we send (not limited) the gap is
// appLimitedGap: a burst (a forwarded keyframe) costs one step, sustained
// queueing keeps stepping down.
func (r *rateControl) timeToReduce(now, rtt time.Duration, acked float64, limited bool) bool {
	if !r.decreasedOnce {
		return true
	}
	gap := min(max(rtt, minReduceGap), maxReduceGap)
	if !limited {
		return now-r.lastDecrease >= max(gap, appLimitedGap)
	}
	return now-r.lastDecrease >= gap || acked < r.estimate/2
}

// update applies the hypothesis u with the acknowledged bitrate (0: unknown)
// and the acknowledged bitrate of media alone (app; probes excluded), which
// caps increases. limited says the path delivered clearly less than we sent:
// the acknowledged rate is the capacity. It returns true if it decreased the
// estimate.
func (r *rateControl) update(now time.Duration, u Usage, acked, app float64, rtt time.Duration, limited bool) bool {
	if acked <= 0 {
		// Nothing acknowledged yet: only overuse acts, halving every 200 ms.
		if u == Overuse && (!r.changed || now-r.lastChange >= initialReduceGap) {
			r.set(r.estimate/2, now)
			r.state = rcHold
			return true
		}
		return false
	}
	if u == Overuse && !r.timeToReduce(now, rtt, acked, limited) {
		return false
	}
	r.transition(u, now)
	switch r.state {
	case rcIncrease:
		if acked > r.capacity.upper() {
			r.capacity = linkCapacity{}
		}
		limit := r.appRatio*app + appLimitedSlack
		if r.estimate < limit {
			var next float64
			if r.capacity.valid {
				next = r.estimate + r.additive(now, rtt)
			} else {
				next = r.estimate + r.multiplicative(now)
			}
			r.estimate = r.clamp(math.Min(next, limit))
		}
		r.lastChange, r.changed = now, true
	case rcDecrease:
		// Capacity-limited: to just below what the path carries, draining the
		// queue. Application-limited (we send less than the path carries and a
		// burst queued): one multiplicative step from the estimate. Falling
		// to β × acknowledged there would throw away a proven estimate that
		// the allocator's layers depend on.
		next := r.beta * acked
		if next > decreaseSlack {
			next -= decreaseSlack
		}
		if !limited {
			next = math.Max(next, r.beta*r.estimate)
		}
		// Already at or below β × the path's rate: the queue drains at this
		// estimate; a further step would only throw capacity away.
		decreased := next < r.estimate
		if decreased {
			r.estimate = r.clamp(next)
			r.lastDecrease, r.decreasedOnce = now, true
		}
		if acked < r.capacity.lower() {
			r.capacity = linkCapacity{}
		}
		r.capacity.update(acked, capacityAlpha)
		r.state = rcHold // until the queues drain
		r.lastChange, r.changed = now, true
		return decreased
	}
	return false
}

func (r *rateControl) multiplicative(now time.Duration) float64 {
	if !r.changed {
		return minIncrease
	}
	f := math.Pow(increaseFactor, math.Min((now-r.lastChange).Seconds(), 1))
	return math.Max(r.estimate*(f-1), minIncrease)
}

// additive is about one packet per response time (RTT + 100 ms).
func (r *rateControl) additive(now, rtt time.Duration) float64 {
	frame := r.estimate / framesPerSecond
	packets := math.Ceil(frame / packetBits)
	avgPacket := frame / math.Max(packets, 1)
	perSecond := math.Max(avgPacket/(rtt+backoffDelay).Seconds(), minNearIncrease)
	dt := 0.0
	if r.changed {
		dt = (now - r.lastChange).Seconds()
	}
	return perSecond * dt
}

// set replaces the estimate (a probe result, a timeout cut).
func (r *rateControl) set(bps float64, now time.Duration) {
	r.estimate = r.clamp(bps)
	r.lastChange, r.changed = now, true
}

func (r *rateControl) clamp(v float64) float64 {
	if math.IsNaN(v) {
		return r.min
	}
	return math.Min(math.Max(v, r.min), r.max)
}
