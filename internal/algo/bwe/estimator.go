// Package bwe estimates the bandwidth toward one receiver from transport-wide
// congestion control feedback (send-side, GCC family): a delay-gradient
// detector (arrival groups, trendline filter, adaptive threshold) drives AIMD
// rate control; a loss-based part cuts the estimate above 10 % loss and holds
// it between 2 % and 10 %; active probing lifts the estimate quickly when the
// allocator wants more and the path has room; REMB is the fallback for
// receivers without transport-wide feedback.
//
// The Estimator is a pure state machine: it never reads the clock, starts no
// goroutine, takes no lock and does not log. Its owner passes the time in,
// calls HandleTimeout at NextTimeout and reads Estimate. OnSent and OnFeedback
// do not allocate.
package bwe

import (
	"math"
	"time"
)

// When the path delivered less than capacityLimited of what we sent over the
// last limitedWindow, it is the bottleneck (not a burst we sent).
const (
	capacityLimited   = 0.8
	limitedWindow     = time.Second
	pathWindow        = 100 * time.Millisecond // the path's rate on overuse: the last arrivals over this…
	pathPackets       = 8                      // …and at least this many packets
	maxArrival        = 1 << 52                // ns (52 days): arrival times beyond are not used
	clusterMediaAfter = 30 * time.Millisecond  // from then on a cluster's padding counts its own media
	lossGrace         = 500 * time.Millisecond // losses of packets sent this soon after a decrease do not count
	ceilingMemory     = 20 * time.Second       // how long the rate a decrease came down from counts as known ground
	overusePersist    = 150 * time.Millisecond // overuse of a path that delivers what we send must last this long
)

// Estimator is the bandwidth estimate toward one receiver connection. It is not
// safe for concurrent use.
type Estimator struct {
	// What OnSent and Departed touch, for every packet sent, comes first and
	// together: fewer cache lines per packet (docs/performance.md).
	epoch    time.Time
	started  bool
	haveSent bool
	lastSent time.Duration
	hist     history
	probe    prober
	media    meter // non-probe bytes sent, on our clock

	cfg      Config
	arrivals interArrival
	trend    trendline
	rc       rateControl
	acked    meter // acknowledged bytes on the receiver's clock
	ackedApp meter // …of media only: what the application sent, for the increase cap
	loss     lossWindow
	queue    queueDetector
	compete  competeDetector

	lossState    lossState
	lossFraction float64
	lastLossCut  time.Duration
	lossCutOnce  bool
	heavyLoss    int           // loss windows above LossHigh in a row
	decreasedAt  time.Duration // last decrease (overuse or loss)
	decreased    bool
	ceiling      float64 // the ground that decrease left known (knownGround)
	overOn       bool    // the detector says overuse since overSince
	overSince    time.Duration
	target       float64 // after the loss-based part
	wanted       float64 // what the media would take with no limit (SetWanted)
	lastTarget   time.Duration
	estimate     int

	rtt          time.Duration
	haveRTT      bool
	twcc         bool // transport-wide feedback seen
	lastFeedback time.Duration
	lastCut      time.Duration // last feedback-timeout cut
	lastOveruse  time.Duration
	haveOveruse  bool
	overuses     int

	remb     int
	rembAt   time.Duration
	haveREMB bool
	rembMode bool // the estimate follows REMB alone
}

// New returns an estimator. It panics if cfg is invalid (see Config.Validate):
// parameters are fixed at build time, so an invalid one is a programming error.
func New(cfg Config) *Estimator {
	if err := cfg.Validate(); err != nil {
		panic("bwe: invalid config: " + err.Error())
	}
	return &Estimator{
		cfg:      cfg,
		hist:     newHistory(cfg.History),
		trend:    newTrendline(),
		queue:    newQueueDetector(),
		compete:  newCompeteDetector(),
		rc:       newRateControl(cfg),
		target:   float64(cfg.StartBitrate),
		estimate: cfg.StartBitrate,
		rtt:      defaultRTT,
	}
}

func (e *Estimator) since(now time.Time) time.Duration {
	if !e.started {
		e.epoch, e.started = now, true
	}
	return now.Sub(e.epoch)
}

// Estimate returns the current estimate in bits per second.
func (e *Estimator) Estimate() int { return e.estimate }

// RTT is the round trip measured from transport-wide feedback (send to the
// report that acknowledged it, smoothed), 0 before any. It includes the
// receiver's feedback interval, so it reads a little high, never far off.
func (e *Estimator) RTT() time.Duration {
	if !e.haveRTT {
		return 0
	}
	return e.rtt
}

// QueueDelay is the queueing delay the path adds now, as the standing-queue
// detector sees it (one-way delay above the least of the last seconds; the
// larger of its smoothed value and the latest feedback's), 0 before any
// feedback. A round trip measured from the least delayed packets leaves it
// out: a packet lost behind this queue is reported, and its retransmission
// arrives, that much later.
func (e *Estimator) QueueDelay() time.Duration {
	return max(e.queue.queue, e.queue.sample, 0)
}

// Delivered is the media (probes excluded) the receiver acknowledged over the
// last AckedWindow, in bits per second by its clock: what the path carries of
// what we send now, 0 before any feedback. In competitive mode it is at most
// the estimate: there the estimate already holds our share on loss, and what
// the path carries of ours it may carry at the others' loss.
func (e *Estimator) Delivered() int {
	r, ok := e.ackedApp.rate(e.cfg.AckedWindow)
	if !ok {
		return 0
	}
	if e.compete.on {
		r = math.Min(r, float64(e.estimate))
	}
	return int(r)
}

// OnSent records a packet sent with transport-wide sequence number seq and size
// bytes on the wire (RTP header, extensions and payload; the estimate is in
// the same units). probe marks padding or RTX sent because ProbeWanted asked.
// Call it for every packet carrying the sequence, in sending order.
func (e *Estimator) OnSent(now time.Time, seq uint16, size int, probe bool) {
	e.record(e.since(now), seq, size, probe)
}

// OnQueued records a packet as OnSent does, for a sender that queues it in a
// batch and tells Departed once the batch is handed to the socket: until
// then it carries the last send time known, which spares a clock read per
// packet and destination.
func (e *Estimator) OnQueued(seq uint16, size int, probe bool) {
	e.record(e.lastSent, seq, size, probe)
}

func (e *Estimator) record(t time.Duration, seq uint16, size int, probe bool) {
	s := e.hist.add(seq, t)
	s.size = uint16(min(max(size, 0), math.MaxUint16))
	s.probe = probe
	if e.probe.state == probeSending {
		s.cluster = uint16(e.probe.id)
		e.probe.sent++
		if probe {
			e.probe.probes++
		} else {
			e.probe.mediaBytes += int64(size)
		}
	}
	if !probe {
		e.media.add(t, size)
	}
	e.lastSent, e.haveSent = t, true
}

// Departed moves the send time of packet seq, recorded by OnSent, to now:
// when it was handed to the socket. A sender that stamps packets as it builds
// them and hands them over in batches tells it after each batch, so that the
// delay the estimator sees is the path's, not the batch's wait. A packet
// already reported on, or one the history no longer holds, keeps its time.
func (e *Estimator) Departed(now time.Time, seq uint16) {
	s := e.hist.get(seq)
	if s == nil || s.reported {
		return
	}
	if t := e.since(now); t > s.at {
		s.at = t
		e.lastSent = max(e.lastSent, t)
	}
}

// OnFeedback processes one transport-wide feedback report.
func (e *Estimator) OnFeedback(now time.Time, fb Feedback) {
	t := e.since(now)
	if e.rembMode || !e.twcc {
		// (Re)starting on transport-wide feedback: continue from where we are.
		e.rc.set(float64(e.estimate), t)
		e.target = float64(e.estimate)
		e.rembMode = false
	}
	e.twcc = true
	e.lastFeedback = t

	r := e.account(t, fb)
	if r.minRTT >= 0 && r.minRTT < maxRTTSample {
		if !e.haveRTT {
			e.rtt, e.haveRTT = r.minRTT, true
		} else {
			e.rtt += time.Duration(rttSmoothing * float64(r.minRTT-e.rtt))
		}
	}
	standing := r.haveOWD && e.queue.observe(t, r.minOWD)
	if r.haveOWD && !e.cfg.DelayOnly {
		send := e.media.rateAt(t, competeSendWin)
		was := e.compete.on
		e.compete.observe(t, r.minOWD, send)
		if was && !e.compete.on {
			// Back to delay mode: the losses counted were the others'
			// overflow, which has drained; holding or cutting on them
			// would slow the climb back (and stop probes).
			e.lossState, e.loss, e.heavyLoss = lossGrow, lossWindow{}, 0
		}
		if e.compete.cleared {
			// A queue that stood for seconds has drained: the flows
			// that filled it stopped. The probes that failed beside
			// them, the losses and the ceiling they left say nothing
			// of the path now: probe at once, at full step.
			e.compete.cleared = false
			e.lossState, e.loss, e.heavyLoss = lossGrow, lossWindow{}, 0
			e.decreased = false
			e.probe.clear(t)
		}
		if e.compete.ready(t, send) && e.delivered() >= competeDelivered {
			e.compete.enter(t)
			// Competitive mode: grow multiplicatively, as far from
			// convergence; the capacity remembered at the last overuse
			// was our share of a queue others fill.
			e.rc.capacity = linkCapacity{}
			e.rc.state = rcIncrease
			e.rc.lastChange, e.rc.changed = t, true
		}
	}
	if e.compete.on {
		standing = false
	}
	e.updateDelay(t, standing)
	if e.decreased && e.decreasedAt == t {
		r.expected, r.lost = 0, 0 // this report's losses are what the decrease answered
	}
	if f, ok := e.loss.add(t, r.expected, r.lost, &e.cfg); ok {
		e.onLoss(t, f)
	}
	e.updateTarget(t)
}

// report sums up what one feedback said.
type report struct {
	expected, lost int           // packets that count for the loss fraction
	minRTT         time.Duration // least time from sending to this feedback; -1: none
	minOWD         time.Duration // least one-way delay (with the clocks' offset)
	haveOWD        bool
}

// account matches a feedback's packets with what was sent and feeds each newly
// acknowledged one to the meters, the probe cluster and the delay detector.
func (e *Estimator) account(t time.Duration, fb Feedback) report {
	r := report{minRTT: -1}
	for i := range fb.Packets {
		p := &fb.Packets[i]
		s := e.hist.get(fb.BaseSeq + uint16(i))
		if s == nil || s.received {
			continue
		}
		inCluster := s.cluster == uint16(e.probe.id) && e.probe.state != probeIdle
		// Packets sent before the last decrease, or before the application
		// could act on it (a layer switch waits for a keyframe), met
		// congestion that decrease answered: their fate does not count
		// against the new rate.
		counts := !e.decreased || s.at > e.decreasedAt+lossGrace
		if !p.Received {
			if !s.reported {
				s.reported = true
				if counts {
					r.expected++
					r.lost++
				}
				if inCluster {
					e.probe.reported++
				}
			}
			continue
		}
		if p.Arrival > maxArrival || p.Arrival < -maxArrival {
			continue // a time no clock gives: ignore the report
		}
		if !s.reported && counts {
			r.expected++
		}
		s.reported, s.received = true, true
		s.arrival = p.Arrival
		if inCluster {
			e.probe.onReceived(s, p.Arrival)
		}
		e.acked.add(p.Arrival, int(s.size))
		if !s.probe {
			e.ackedApp.add(p.Arrival, int(s.size))
		} else {
			e.ackedApp.add(p.Arrival, 0) // keep its window moving
		}
		if rtt := t - s.at; rtt >= 0 && (r.minRTT < 0 || rtt < r.minRTT) {
			r.minRTT = rtt
		}
		if owd := p.Arrival - s.at; !r.haveOWD || owd < r.minOWD {
			r.minOWD, r.haveOWD = owd, true
		}
		resets := e.arrivals.resets
		d, ok := e.arrivals.add(s.at, p.Arrival, int(s.size))
		if e.arrivals.resets != resets {
			e.trend.restart()
		}
		if ok {
			e.trend.add(d)
		}
	}
	return r
}

// updateDelay runs the rate control on the detector's hypothesis, or applies a
// finished probe's result. standing reports a standing queue: overuse of a
// saturated path even if the delay is flat, unless the path is far faster
// than what we send (fastPath: a busy receiver's delay, not our queue).
func (e *Estimator) updateDelay(t time.Duration, standing bool) {
	usage := e.usage()
	acked, ok := e.acked.rate(e.cfg.AckedWindow)
	if !ok {
		acked = 0
	}
	// Whether the path is far faster than we send (fastPath): asked only on
	// overuse, it walks the history.
	fast := (standing || usage == Overuse) && e.fastPath(acked)
	standing = standing && !fast
	switch {
	case standing:
		usage = Overuse
	case usage == Overuse && e.queue.started && e.queue.sample < drainedQueue:
		// The trend still remembers a queue that has drained: decreasing now
		// would go below the path on a rate measured in the gap.
		usage = Underuse
	}
	if usage == Overuse {
		e.lastOveruse, e.haveOveruse = t, true
	}
	if e.probe.complete(t) {
		if e.finishProbe(t, usage) {
			return
		}
	}
	app, ok := e.ackedApp.rate(e.cfg.AckedWindow)
	if !ok {
		app = acked
	}
	if e.compete.on {
		// Grow beyond what we send, to the layers held back (compete.go),
		// but no further: with nothing held back the estimate would climb
		// 8 %/s without bound while our loss stays low (20 Mb/s on a 4 Mb/s
		// link in the browser test), and take seconds of heavy loss to come
		// down when more flows join.
		app = math.Max(app, math.Min(e.target, e.wanted))
	}
	if usage == Overuse && !e.overOn {
		e.overOn, e.overSince = true, t
	} else if usage != Overuse {
		e.overOn = false
	}
	limited := false
	if usage == Overuse {
		// The path is saturated while queues build: its recent arrival
		// rate is its capacity, undiluted by the quieter time before the
		// queue.
		if r, ok := e.pathRate(); ok {
			acked = r
		}
		// A path far faster than our rate is not what limits delivery: a
		// receiver that read late makes the arrival rate, measured over its
		// pause, a fraction of the path's (it cut 1 Mb/s to 30 kb/s).
		limited = !fast && e.delivered() < capacityLimited
		if !limited && !standing && t-e.overSince < overusePersist {
			// The path delivers what we send: a burst's queue passes,
			// congestion persists. Wait to see which it is.
			usage = Underuse
		}
	}
	before := float64(e.estimate)
	if e.rc.update(t, usage, acked, app, e.rtt, limited) {
		e.overuses++
		e.markDecrease(t, before, e.rc.estimate)
	}
}

// markDecrease notes a decrease from estimate from to to: the ground it leaves
// known (knownGround), the standing-queue detector waits for the queue to
// drain, and the loss window restarts without the packets sent
// before it (or within lossGrace after it).
func (e *Estimator) markDecrease(t time.Duration, from, to float64) {
	e.decreasedAt, e.decreased, e.ceiling = t, true, knownGround(from, to, e.cfg.Beta, e.compete.on)
	e.queue.decreased(t)
	e.compete.decreased()
	e.loss = lossWindow{} // what it counted so far is the congestion just answered
}

// knownGround is the ceiling a decrease from estimate from to estimate to
// leaves (probe.go's fresh rule): from, unless the cut more than halved it;
// then the path's rate the cut was taken from (to / Beta). A cut that deep
// comes after the capacity collapsed (a cap's onset: 904 → 211 kb/s, the
// path delivering 254), and from is the rate the old capacity carried, not
// ground this path refused: with from as the ceiling, each probe after the
// cap was lifted only "regained known ground", backed off 1, 2, then 3 s like
// a failure and shrank its step toward 1.25 ×, and the video stayed on its
// lowest layer for 10 s on a free path (CI; the simulation's 400 kb/s cap
// lifted after 3-6 s: 16-19 s to 2.5 Mb/s). At a steady capacity cuts are
// shallow and from stays. Not in competitive mode, whose cuts follow the
// share others leave.
func knownGround(from, to, beta float64, competing bool) float64 {
	if competing || to >= from/2 {
		return from
	}
	return min(from, to/beta)
}

func (e *Estimator) clamp(v float64) int {
	if math.IsNaN(v) {
		return e.cfg.MinBitrate
	}
	v = math.Min(math.Max(v, float64(e.cfg.MinBitrate)), float64(e.cfg.MaxBitrate))
	return int(v)
}

// LossFraction is the share of our packets lost in the last closed loss
// window, 0 before any.
func (e *Estimator) LossFraction() float64 { return e.lossFraction }

// Competing reports competitive mode (compete.go): the queue is kept full by
// flows that do not back off, and their losses hit our media too.
func (e *Estimator) Competing() bool { return e.compete.on }

// SetWanted tells the estimator what the receiver's media would take with no
// bandwidth limit (alloc.Allocator.Desired: 0 when nothing is held back). In
// competitive mode the estimate grows past what we send only towards it.
func (e *Estimator) SetWanted(bps int) { e.wanted = float64(max(bps, 0)) }

// OnREMB takes a receiver's REMB. Without transport-wide feedback for
// Config.REMBFallback it sets the estimate; otherwise it only caps it.
func (e *Estimator) OnREMB(now time.Time, bps int) {
	t := e.since(now)
	e.remb, e.rembAt, e.haveREMB = max(bps, 0), t, true
	if !e.twcc || t-e.lastFeedback >= e.cfg.REMBFallback {
		e.rembMode = true
		e.estimate = e.clamp(float64(e.remb))
		return
	}
	e.estimate = e.clamp(math.Min(e.target, float64(e.remb)))
}

// HandleTimeout ends a probe cluster whose time is over, gives up on a probe
// whose feedback did not come, and cuts the estimate by 20 % per
// Config.FeedbackTimeout while we send and transport-wide feedback has stopped.
func (e *Estimator) HandleTimeout(now time.Time) {
	t := e.since(now)
	p := &e.probe
	if p.state == probeSending && e.probeOver(t) {
		p.state, p.endedAt = probeWaiting, t
	}
	if p.state == probeWaiting && t-p.endedAt >= probeResultTimeout {
		if !e.finishProbe(t, e.usage()) {
			e.updateTarget(t)
		}
	}
	if e.twcc && !e.rembMode && e.haveSent && t-e.lastSent < e.cfg.FeedbackTimeout &&
		t-e.lastFeedback >= e.cfg.FeedbackTimeout && t-e.lastCut >= e.cfg.FeedbackTimeout {
		e.lastCut = t
		e.rc.set(e.rc.estimate*0.8, t)
		e.target = math.Min(e.target, e.rc.estimate)
		e.updateTarget(t)
	}
}

// NextTimeout returns when HandleTimeout should next run; the zero Time means
// nothing is scheduled.
func (e *Estimator) NextTimeout() time.Time {
	if !e.started {
		return time.Time{}
	}
	next := time.Duration(math.MaxInt64)
	switch e.probe.state {
	case probeSending:
		next = e.probe.start + e.cfg.ProbeDuration
	case probeWaiting:
		next = e.probe.endedAt + probeResultTimeout
	}
	if e.twcc && !e.rembMode {
		next = min(next, max(e.lastFeedback, e.lastCut)+e.cfg.FeedbackTimeout)
	}
	if next == time.Duration(math.MaxInt64) {
		return time.Time{}
	}
	return e.epoch.Add(next)
}

// Stats is a snapshot of the estimator's state, for logs and plots.
type Stats struct {
	Estimate     int           // bits/s
	DelayBased   int           // AIMD estimate, bits/s
	LossBased    int           // after the loss-based part, bits/s
	Acked        int           // acknowledged bitrate, bits/s (0: unknown)
	Usage        Usage         // delay detector hypothesis
	Trend        float64       // modified trend (ms) compared with Threshold
	Queue        time.Duration // standing queue estimate
	Threshold    float64       // adaptive threshold (ms)
	LossFraction float64       // of the last closed loss window
	RTT          time.Duration
	Probing      bool // a cluster is being sent or evaluated
	Probes       int  // clusters started
	ProbeWins    int  // clusters that raised the estimate
	LastProbe    int  // rate proven by the last cluster, bits/s (0: nothing)
	Overuses     int  // decreases on overuse
	REMB         bool // following REMB alone
	// Competing: the queue is driven by flows that do not back off, and the
	// estimate holds its share on loss (compete.go); CompeteEntries counts
	// the times it switched to that mode.
	Competing      bool
	CompeteEntries int
}

// Stats returns the current state.
func (e *Estimator) Stats() Stats {
	acked, _ := e.acked.rate(e.cfg.AckedWindow)
	return Stats{
		Estimate:     e.estimate,
		DelayBased:   int(e.rc.estimate),
		LossBased:    int(e.target),
		Acked:        int(acked),
		Usage:        e.trend.usage,
		Trend:        e.trend.trend,
		Queue:        e.queue.queue,
		Threshold:    e.trend.threshold,
		LossFraction: e.lossFraction,
		RTT:          e.rtt,
		Probing:      e.probe.state != probeIdle,
		Probes:       e.probe.clusters,
		ProbeWins:    e.probe.successes,
		LastProbe:    int(e.probe.lastResult),
		Overuses:     e.overuses,
		REMB:         e.rembMode,

		Competing:      e.compete.on,
		CompeteEntries: e.compete.entries,
	}
}

// usage is the delay detector's hypothesis as the rate control takes it:
// Normal in competitive mode, where the queue is others' and only loss counts.
func (e *Estimator) usage() Usage {
	if e.compete.on {
		return Normal
	}
	return e.trend.usage
}
