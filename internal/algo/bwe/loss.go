package bwe

import (
	"math"
	"time"
)

type lossState int8

const (
	lossGrow lossState = iota // loss below LossLow: the estimate may grow
	lossHold                  // between LossLow and LossHigh: it may not grow
	lossCut                   // above LossHigh: it was cut
)

// lossWindow counts reported and lost packets until the window is long and
// large enough to judge the loss fraction.
type lossWindow struct {
	expected, lost int
	start          time.Duration
	started        bool
}

// add counts one feedback's packets and returns the loss fraction when the
// window closes.
func (w *lossWindow) add(now time.Duration, expected, lost int, cfg *Config) (float64, bool) {
	if !w.started {
		w.start, w.started = now, true
	}
	w.expected += expected
	w.lost += lost
	if w.expected < cfg.LossMinPackets || now-w.start < cfg.LossWindow {
		return 0, false
	}
	f := float64(w.lost) / float64(w.expected)
	*w = lossWindow{start: now, started: true}
	return f, true
}

// onLoss applies a closed loss window: cut above LossHigh (at most once per
// RTT + 300 ms) by half the loss fraction, but not below β × the path's
// delivery rate (in competitive mode, from the second such window in a row,
// to the TCP-friendly rate instead); hold between LossLow and LossHigh; grow
// below. Competitive mode holds its share between the two (below).
func (e *Estimator) onLoss(t time.Duration, f float64) {
	e.lossFraction = f
	if f <= e.cfg.LossHigh {
		e.heavyLoss = 0
	}
	if e.compete.on && f > e.cfg.LossLow && f <= e.cfg.LossHigh {
		// Competitive mode: loss above LossLow is the queue overflowing,
		// which the flows we share it with answer by backing off. We give
		// up the headroom above what we send (β × the estimate), but not
		// what the path delivers of our media: that is the share we hold.
		// Loss above LossHigh cuts below it (the case below).
		// While we send well below the estimate (application-limited,
		// under β × it), the loss is the others' overflow, not our
		// headroom's: hold without a cut, so that the estimate can still
		// reach the next layer between the overflows.
		e.lossState = lossHold
		r, ok := e.ackedApp.rate(e.cfg.AckedWindow)
		before := float64(e.estimate)
		if ok && r < e.cfg.Beta*math.Min(e.target, before) {
			return
		}
		if !e.lossCutOnce || t-e.lastLossCut >= e.rtt+300*time.Millisecond {
			cut := math.Min(e.target, before) * e.cfg.Beta
			if ok {
				cut = math.Max(cut, math.Min(r, e.target))
			}
			e.target = cut
			e.lastLossCut, e.lossCutOnce = t, true
			e.markDecrease(t, before, cut)
		}
		return
	}
	switch {
	case f > e.cfg.LossHigh:
		e.lossState = lossCut
		e.heavyLoss++
		if !e.lossCutOnce || t-e.lastLossCut >= e.rtt+300*time.Millisecond {
			before := float64(e.estimate)
			cut := math.Min(e.target, before) * (1 - f/2)
			if e.compete.on && e.heavyLoss >= 2 {
				// Heavy loss, window after window, in a queue others
				// keep full: many flows share it. Go to what a TCP flow
				// gets at this loss and round trip. With the halving cut
				// alone, once per window from the share held against one
				// flow, the stage froze on 360p through 10 s of 10–40 %
				// loss (browser test, ten CUBIC flows). What the path
				// delivers of ours is no floor here: it delivers it at
				// that loss. A single such window is one flow's overflow
				// burst: cutting on it took the simulation's one-flow
				// share from 1.44 to 1.09 Mb/s.
				cut = math.Max(math.Min(cut, tcpFriendlyRate(f, e.rtt)), math.Min(tcpFriendlyFloor, e.target))
			} else if r, ok := e.pathRate(); ok {
				// Never below β × what the path delivers: sending that
				// much loses nothing to congestion.
				cut = math.Max(cut, math.Min(e.cfg.Beta*r, e.target))
			}
			e.target = cut
			e.lastLossCut, e.lossCutOnce = t, true
			e.markDecrease(t, before, cut)
		}
	case f >= e.cfg.LossLow:
		e.lossState = lossHold
	default:
		e.lossState = lossGrow
	}
}

// updateTarget combines the delay-based estimate with the loss-based limit and
// REMB. The loss side follows the delay-based estimate down at once and up at
// most 8 % per second (plus 1 kb/s), and not at all while losses exceed LossLow.
func (e *Estimator) updateTarget(t time.Duration) {
	d := e.rc.estimate
	dt := math.Min(math.Max((t-e.lastTarget).Seconds(), 0), 1)
	e.lastTarget = t
	if e.lossState == lossGrow && e.target < d {
		e.target = math.Min(d, e.target*math.Pow(increaseFactor, dt)+1000*dt)
	}
	e.target = math.Min(e.target, d)
	v := e.target
	if e.haveREMB && t-e.rembAt < e.cfg.REMBFallback {
		v = math.Min(v, float64(e.remb))
	}
	e.estimate = e.clamp(v)
}

// tcpFriendlyBits is the packet size of the TCP-friendly rate: a full video
// packet.
const tcpFriendlyBits = 1200 * 8

// tcpFriendlyFloor is the least the TCP-friendly cut goes to: the lowest
// simulcast layer at its full frame rate and the audio. Below it the video is
// suspended (a quarter of the time in one simulation seed of ten flows, at
// 40 % loss), and a conference without its stage is worth less to its users
// than a download's 150 kb/s.
const tcpFriendlyFloor = 150_000

// tcpFriendlyRate is the rate of a TCP flow seeing loss fraction f at round
// trip rtt (RFC 5348's simple form: s × √(3/2) / (R × √p)), in bits/s.
func tcpFriendlyRate(f float64, rtt time.Duration) float64 {
	r := max(rtt, 10*time.Millisecond).Seconds()
	return tcpFriendlyBits * math.Sqrt(1.5) / (r * math.Sqrt(max(f, 1e-6)))
}
