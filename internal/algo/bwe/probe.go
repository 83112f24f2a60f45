package bwe

import (
	"math"
	"time"
)

type probeState int8

const (
	probeIdle    probeState = iota
	probeSending            // the cluster is being sent
	probeWaiting            // sent; waiting for its feedback
)

// Probe result rules (libwebrtc's ProbeBitrateEstimator).
const (
	probeMinReceived   = 0.8                    // fraction of the cluster that must arrive
	probeMaxInterval   = time.Second            // longer send or receive spans are not a probe
	probeMaxRatio      = 2.0                    // receive rate above twice the send rate: bogus
	probeSaturated     = 0.9                    // receive rate below this × send rate: link saturated
	probeMinGain       = 1.05                   // a result must beat the estimate by this to count
	probeMinStep       = 1.25                   // probe at least this × the estimate
	probeOvershoot     = 1.1                    // and this × what the allocator wants, to prove it with room
	probeWantMargin    = 1.0                    // probe only if the allocator wants more than this × the estimate
	probeResultTimeout = time.Second            // feedback for a cluster comes within this after it ends
	probeMaxLength     = 3                      // × ProbeDuration when too few probe packets went out
	sendRateWindow     = 300 * time.Millisecond // media send rate window, for the padding rate
)

// prober schedules probe clusters and measures their acknowledged rate. All
// packets sent while a cluster is on (media and padding) belong to it.
type prober struct {
	state   probeState
	id      int32
	start   time.Duration
	endedAt time.Duration
	target  float64 // total bits/s the cluster aims at

	sent, probes int   // packets sent during the cluster; of them, probe packets
	mediaBytes   int64 // non-probe bytes sent during the cluster
	// Feedback on the cluster.
	reported, received          int
	bytes                       int64
	firstSend, lastSend         time.Duration
	lastSendSize                int
	firstArrival, lastArrival   time.Duration
	firstArrivalSize            int
	next                        time.Duration
	backoff                     time.Duration
	failures                    int // consecutive
	clusters, successes, failed int
	lastResult                  float64
}

func (p *prober) begin(now time.Duration, target float64) {
	p.id++
	if uint16(p.id) == 0 { // sent.cluster keeps the low 16 bits, and 0 there is none
		p.id++
	}
	p.state = probeSending
	p.start = now
	p.target = target
	p.sent, p.probes, p.reported, p.received, p.bytes, p.mediaBytes = 0, 0, 0, 0, 0, 0
	p.clusters++
}

// onReceived accounts one received packet of the cluster.
func (p *prober) onReceived(s *sent, arrival time.Duration) {
	p.reported++
	size := int(s.size)
	if p.received == 0 {
		p.firstSend, p.lastSend, p.lastSendSize = s.at, s.at, size
		p.firstArrival, p.lastArrival, p.firstArrivalSize = arrival, arrival, size
	} else {
		if s.at < p.firstSend {
			p.firstSend = s.at
		}
		if s.at >= p.lastSend {
			p.lastSend, p.lastSendSize = s.at, size
		}
		if arrival < p.firstArrival {
			p.firstArrival, p.firstArrivalSize = arrival, size
		}
		p.lastArrival = max(p.lastArrival, arrival)
	}
	p.received++
	p.bytes += int64(size)
}

// complete reports whether the cluster's feedback is all in, or overdue.
func (p *prober) complete(now time.Duration) bool {
	return p.state == probeWaiting && (p.reported >= p.sent || now-p.endedAt >= probeResultTimeout)
}

// result is the rate the cluster proved, or 0 when it proves nothing.
func (p *prober) result(minPackets int) float64 {
	if p.received < minPackets || float64(p.received) < probeMinReceived*float64(p.sent) {
		return 0
	}
	sendSpan, recvSpan := p.lastSend-p.firstSend, p.lastArrival-p.firstArrival
	if sendSpan <= 0 || recvSpan <= 0 || sendSpan > probeMaxInterval || recvSpan > probeMaxInterval {
		return 0
	}
	sendRate := float64(p.bytes-int64(p.lastSendSize)) * 8 / sendSpan.Seconds()
	recvRate := float64(p.bytes-int64(p.firstArrivalSize)) * 8 / recvSpan.Seconds()
	if recvRate > probeMaxRatio*sendRate {
		return 0
	}
	if recvRate < probeSaturated*sendRate {
		// The path saturated: its rate is what arrived. libwebrtc takes 95 %
		// of it; the allocator keeps its own margin below the estimate, so
		// the path's rate itself is the useful figure here.
		return recvRate
	}
	return math.Min(sendRate, recvRate)
}

// gain is the probe rate multiple after the consecutive failures: each failure
// halves the step above the estimate (2, 1.5, 1.25 … with gain 2), down to
// probeMinStep, so a probe finds the room left below a link that refused a
// larger one.
func (p *prober) gain(max float64) float64 {
	g := 1 + (max-1)/float64(int(1)<<min(p.failures, 16))
	return math.Max(g, probeMinStep)
}

// finish closes the cluster and schedules the next: at once after a success,
// after a doubling back-off after a failure.
func (p *prober) finish(now time.Duration, success bool, cfg *Config) {
	p.state = probeIdle
	if success {
		p.successes++
		p.failures = 0
		p.backoff = 0
		p.next = now
		return
	}
	p.failed++
	p.failures++
	if p.backoff == 0 {
		p.backoff = cfg.ProbeBackoffMin
	} else {
		p.backoff = min(2*p.backoff, cfg.ProbeBackoffMax)
	}
	p.next = now + p.backoff
}

// clear forgets the failures: the next cluster may start at now, at full step.
func (p *prober) clear(now time.Duration) {
	p.failures, p.backoff = 0, 0
	p.next = min(p.next, now)
}

// ProbeWanted says whether to send probe padding now, and at what rate in bits
// per second on top of the media. desired is what the allocator would like to
// send (alloc.Allocator.Desired). A cluster starts when desired exceeds the
// estimate, no overuse was seen for Config.ProbeAfterOveruse, loss is not above
// LossHigh, transport-wide feedback works and the back-off allows; it then lasts
// Config.ProbeDuration and at least Config.ProbeMinPackets probe packets. Call
// it at the pacing interval (every few milliseconds) and mark the padding
// packets sent with OnSent(…, probe=true).
func (e *Estimator) ProbeWanted(now time.Time, desired int) (rate int, ok bool) {
	t := e.since(now)
	p := &e.probe
	if p.state == probeSending {
		if e.probeOver(t) {
			p.state, p.endedAt = probeWaiting, t
			return 0, false
		}
		return e.padding(t), true
	}
	if p.state != probeIdle || !e.twcc || e.rembMode || t < p.next {
		return 0, false
	}
	est := float64(e.estimate)
	if float64(desired) <= est*probeWantMargin || e.estimate >= e.cfg.MaxBitrate {
		return 0, false
	}
	if e.haveOveruse && t-e.lastOveruse < e.cfg.ProbeAfterOveruse || e.lossState == lossCut ||
		e.usage() == Overuse {
		return 0, false
	}
	target := math.Min(est*p.gain(e.cfg.ProbeGain), math.Max(float64(desired)*probeOvershoot, est*probeOvershoot))
	target = math.Min(target, float64(e.cfg.MaxBitrate))
	p.begin(t, target)
	pad := e.padding(t)
	if pad <= 0 {
		// The media alone is above the target: nothing to probe with padding.
		p.state = probeIdle
		p.clusters--
		return 0, false
	}
	return pad, true
}

func (e *Estimator) probeOver(t time.Duration) bool {
	p := &e.probe
	d := t - p.start
	return d >= e.cfg.ProbeDuration && p.probes >= e.cfg.ProbeMinPackets ||
		d >= probeMaxLength*e.cfg.ProbeDuration
}

// padding is the probe target minus the media rate: the media sent during the
// cluster once it has run a little, so that bursty media does not leave the
// cluster short of its target, the recent media rate before.
func (e *Estimator) padding(t time.Duration) int {
	p := &e.probe
	media := e.media.rateAt(t, sendRateWindow)
	if d := t - p.start; d >= clusterMediaAfter {
		media = float64(p.mediaBytes) * 8 / d.Seconds()
	}
	return int(math.Max(p.target-media, 0))
}

// finishProbe evaluates the finished cluster and applies it if it proved more
// than the estimate and the detector is not signalling overuse (libwebrtc's
// rule: a cluster that overshot the path queues briefly, but its receive rate
// still measures the path); it reports whether it did.
func (e *Estimator) finishProbe(t time.Duration, usage Usage) bool {
	r := e.probe.result(e.cfg.ProbeMinPackets)
	e.probe.lastResult = r
	ok := r > 0 && usage != Overuse && r > probeMinGain*float64(e.estimate)
	// Probing on at once is for new ground. A result that only regains the
	// rate the path refused at its last overuse backs off like a failure,
	// or probes and decreases would alternate every second at a capacity.
	fresh := ok && (!e.decreased || t-e.decreasedAt > ceilingMemory || r > probeMinGain*e.ceiling)
	e.probe.finish(t, fresh, &e.cfg)
	if !ok {
		return false
	}
	e.rc.set(r, t)
	e.rc.capacity.update(r, capacityProbe)
	e.target = math.Max(e.target, e.rc.estimate)
	return true
}
