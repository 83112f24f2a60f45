package sim

import (
	"math"
	"math/rand"
	"time"

	"github.com/pion/interceptor/pkg/twcc"
	"github.com/pion/rtcp"

	"github.com/podium-sfu/podium/internal/algo/alloc"
	"github.com/podium-sfu/podium/internal/algo/bwe"
	"github.com/podium-sfu/podium/internal/netem"
)

// Scenario describes one simulated run. Zero fields take the defaults noted.
type Scenario struct {
	Name     string
	Duration time.Duration
	Capacity []Step        // piecewise-constant capacity; the first step applies from 0
	Queue    time.Duration // drop-tail limit (100 ms)
	Delay    time.Duration // one-way propagation delay (25 ms); feedback returns with the same delay
	Jitter   time.Duration // extra delay, uniform in [0, Jitter), order kept
	Loss     float64       // random loss on the path
	BurstLen float64       // mean loss burst in packets (Gilbert–Elliott); 0: independent
	Seed     int64

	Audio            int            // audio bits per second (40 kb/s)
	Sources          []alloc.Source // the videos; their Layers' Bitrate is both measured and generated
	FeedbackInterval time.Duration  // transport-wide feedback period (50 ms)
	SwitchDelay      time.Duration  // until a spatial switch takes effect: keyframe request and arrival (150 ms)
	AllocInterval    time.Duration  // allocation period (100 ms)

	BWE   *bwe.Config   // nil: bwe.DefaultConfig()
	Alloc *alloc.Config // nil: alloc.DefaultConfig()

	NoProbe bool          // never send probes
	REMB    time.Duration // > 0: the receiver sends REMB (0.9 × capacity, an ideal receiver estimate) at this period
	NoTWCC  bool          // the receiver sends no transport-wide feedback
	Pion    bool          // build feedback with pion's twcc.Recorder, marshal, parse and convert it
	TCP     []TCPFlow     // competing loss-based flows through the same queue
}

// Pick is one source's allocation at a sample.
type Pick struct {
	Encoding, Temporal int
	Suspended          bool
}

// Sample is the state every 100 ms of simulated time.
type Sample struct {
	T        time.Duration
	Capacity int // bits/s
	Estimate int
	Sent     int // everything sent over the last 500 ms, bits/s
	Padding  int // probe padding sent over the last 500 ms, bits/s
	Queue    time.Duration
	Media    int // video and audio delivered to the receiver over the last 500 ms, bits/s
	TCP      int // the competing flows' goodput over the last 500 ms, bits/s
	Picks    []Pick
	Stats    bwe.Stats
}

// Switch is one change of a source's allocation.
type Switch struct {
	T        time.Duration
	Source   int
	From, To Pick
}

// Result is a run's record.
type Result struct {
	Scenario Scenario
	Samples  []Sample
	Switches []Switch
	// Frames[s][i] is the number of frames of source s fully delivered in
	// second i (lost video packets are retransmitted once, as after a NACK,
	// within 20 % of the estimate).
	Frames    [][]int
	Drops     int // queue drops
	Losses    int // path losses
	Delivered int
	Final     bwe.Stats
}

const (
	tick        = time.Millisecond
	mtu         = 1200
	pacingRate  = 8_000_000 // the publisher's pacer: packets of a frame arrive at the SFU this fast
	keyFactor   = 5         // a keyframe is this many average frames
	sampleEvery = 100 * time.Millisecond
	rxClock     = 1000 * time.Second // the receiver's clock is offset from ours
	twccUnit    = 250 * time.Microsecond
	rtxShare    = 0.2                    // retransmissions may take this share of the estimate
	rtxMaxAge   = 300 * time.Millisecond // retransmissions waiting longer are dropped
)

var tlPattern = [4]int{0, 2, 1, 2} // VP8 L1T3 temporal layer of each frame

type packet struct {
	size  int
	src   int // -1 audio, -2 padding
	frame int // global frame id; -1 none
	rtx   bool
}

type retransmission struct {
	at time.Duration
	p  packet
}

type videoSource struct {
	spec      alloc.Source
	want      Pick // the allocator's latest decision
	have      Pick // what is forwarded now
	switchAt  time.Duration
	switching bool
	keyframe  bool
	frame     int
	queue     []packet
	nextSend  time.Duration
}

type inFlight struct {
	seq     int64
	arrival time.Duration
	p       packet
}

type runner struct {
	sc   Scenario
	est  *bwe.Estimator
	al   *alloc.Allocator
	lnk  link
	rng  *rand.Rand // content (frame sizes)
	base time.Time

	srcs      []videoSource
	tcp       []tcpConn
	rxBuckets [50]int // media bytes delivered per 10 ms
	seq       int64
	flight    []inFlight // sent, not yet arrived, in arrival order
	frameLen  map[int]int
	frameGot  map[int]int
	frameSrc  map[int]int
	nextID    int

	// receiver
	rxBase, rxHigh int64 // next sequence to report, highest received
	rxArr          map[int64]time.Duration
	recorder       *twcc.Recorder
	fbQueue        []pendingFeedback
	fb             bwe.Feedback
	rtx            []retransmission // lost video packets the receiver will NACK
	rtxCredit      float64

	// sent-rate meters (500 ms of 10 ms buckets)
	sentBuckets, padBuckets [50]int
	padCredit               float64

	res Result
}

type pendingFeedback struct {
	at   time.Duration
	fb   bwe.Feedback
	remb int
	raw  []byte
}

func (sc *Scenario) defaults() {
	if sc.Queue == 0 {
		sc.Queue = 100 * time.Millisecond
	}
	if sc.Delay == 0 {
		sc.Delay = 25 * time.Millisecond
	}
	if sc.Audio == 0 {
		sc.Audio = 40_000
	}
	if sc.FeedbackInterval == 0 {
		sc.FeedbackInterval = 50 * time.Millisecond
	}
	if sc.SwitchDelay == 0 {
		sc.SwitchDelay = 150 * time.Millisecond
	}
	if sc.AllocInterval == 0 {
		sc.AllocInterval = 100 * time.Millisecond
	}
}

// Run simulates the scenario.
func Run(sc Scenario) Result {
	sc.defaults()
	bc := bwe.DefaultConfig()
	if sc.BWE != nil {
		bc = *sc.BWE
	}
	ac := alloc.DefaultConfig()
	if sc.Alloc != nil {
		ac = *sc.Alloc
	}
	r := &runner{
		sc:  sc,
		est: bwe.New(bc),
		al:  alloc.New(ac),
		lnk: link{steps: sc.Capacity, Link: netem.New(netem.Config{Rate: sc.Capacity[0].Bps, QueueTime: sc.Queue,
			Delay: sc.Delay, Jitter: sc.Jitter, Loss: sc.Loss, BurstLen: sc.BurstLen}, rand.New(rand.NewSource(sc.Seed)))},
		rng:      rand.New(rand.NewSource(sc.Seed + 1)),
		base:     time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		frameLen: map[int]int{},
		frameGot: map[int]int{},
		frameSrc: map[int]int{},
		rxArr:    map[int64]time.Duration{},
		rxHigh:   -1,
	}
	if sc.Pion {
		r.recorder = twcc.NewRecorder(1)
	}
	r.res.Scenario = sc
	seconds := int(sc.Duration/time.Second) + 1
	for _, f := range sc.TCP {
		r.tcp = append(r.tcp, newTCP(f))
	}
	for _, s := range sc.Sources {
		r.srcs = append(r.srcs, videoSource{spec: s, want: Pick{Encoding: -1}, have: Pick{Encoding: -1}})
		r.res.Frames = append(r.res.Frames, make([]int, seconds))
	}
	r.run()
	st := r.lnk.Stats()
	r.res.Drops, r.res.Losses, r.res.Delivered = st.Dropped, st.Lost, st.Delivered
	r.res.Final = r.est.Stats()
	return r.res
}

func (r *runner) now(t time.Duration) time.Time { return r.base.Add(t) }

func (r *runner) run() {
	sc := &r.sc
	nextAlloc, nextFb, nextSample, nextREMB := time.Duration(0), sc.FeedbackInterval, time.Duration(0), sc.REMB
	frameInterval := time.Second / 30
	nextFrame, nextAudio := time.Duration(0), time.Duration(0)
	for t := time.Duration(0); t <= sc.Duration; t += tick {
		now := r.now(t)
		r.receive(t)
		r.deliverFeedback(t)
		if nt := r.est.NextTimeout(); !nt.IsZero() && !now.Before(nt) {
			r.est.HandleTimeout(now)
		}
		if t >= nextAlloc || (!r.al.NextTimeout().IsZero() && !now.Before(r.al.NextTimeout())) {
			r.allocate(t)
			nextAlloc = t + sc.AllocInterval
		}
		r.applySwitches(t)
		if t >= nextAudio {
			r.send(t, packet{size: sc.Audio / 8 / 50, src: -1, frame: -1})
			nextAudio += 20 * time.Millisecond
		}
		if t >= nextFrame {
			for i := range r.srcs {
				r.frame(t, i)
			}
			nextFrame += frameInterval
		}
		r.pace(t)
		r.retransmit(t)
		r.probe(t)
		for i := range r.tcp {
			r.tcp[i].step(t, r)
		}
		if !sc.NoTWCC && t >= nextFb {
			r.feedback(t)
			nextFb += sc.FeedbackInterval
		}
		if sc.REMB > 0 && t >= nextREMB {
			r.fbQueue = append(r.fbQueue, pendingFeedback{at: t + sc.Delay, remb: r.lnk.capacity(t) * 9 / 10})
			nextREMB += sc.REMB
		}
		r.rollMeters(t)
		for i := range r.tcp {
			r.tcp[i].roll(t)
		}
		if t >= nextSample {
			r.sample(t)
			nextSample += sampleEvery
		}
	}
}

func (r *runner) allocate(t time.Duration) {
	sources := make([]alloc.Source, len(r.srcs))
	for i := range r.srcs {
		sources[i] = r.srcs[i].spec
	}
	out := r.al.Allocate(r.now(t), r.est.Estimate(), r.sc.Audio, sources)
	for i, a := range out {
		p := Pick{Encoding: a.Encoding, Temporal: a.MaxTemporal, Suspended: a.Suspended}
		s := &r.srcs[i]
		if p != s.want {
			if s.want.Encoding >= 0 || s.want.Suspended {
				r.res.Switches = append(r.res.Switches, Switch{T: t, Source: i, From: s.want, To: p})
			}
			s.want = p
		}
	}
}

// applySwitches makes temporal changes at once and spatial ones after the
// keyframe delay, the new encoding starting with a keyframe.
func (r *runner) applySwitches(t time.Duration) {
	for i := range r.srcs {
		s := &r.srcs[i]
		if s.want == s.have {
			s.switching = false
			continue
		}
		spatial := s.want.Encoding != s.have.Encoding || s.want.Suspended != s.have.Suspended
		if !spatial || s.want.Suspended {
			s.have = s.want
			s.switching = false
			continue
		}
		if !s.switching {
			s.switching, s.switchAt = true, t+r.sc.SwitchDelay
		}
		if t >= s.switchAt {
			s.have = s.want
			s.switching = false
			s.keyframe = true
		}
	}
}

func (r *runner) frame(t time.Duration, i int) {
	s := &r.srcs[i]
	f := s.frame
	s.frame++
	if s.have.Suspended || s.have.Encoding < 0 || s.have.Encoding >= len(s.spec.Layers) {
		return
	}
	tl := tlPattern[f%4]
	if tl > s.have.Temporal && !s.keyframe {
		return
	}
	rates := s.spec.Layers[s.have.Encoding].Bitrate
	var bits float64
	switch tl {
	case 0:
		bits = float64(rates[0]) / 7.5
	case 1:
		bits = float64(rates[1]-rates[0]) / 7.5
	default:
		bits = float64(rates[2]-rates[1]) / 15
	}
	if s.keyframe {
		bits = float64(rates[2]) / 30 * keyFactor
		s.keyframe = false
	}
	bytes := int(bits / 8 * (0.75 + 0.5*r.rng.Float64()))
	if bytes <= 0 {
		return
	}
	id := r.nextID
	r.nextID++
	n := (bytes + mtu - 1) / mtu
	r.frameLen[id], r.frameSrc[id] = n, i
	for k := 0; k < n; k++ {
		size := mtu
		if k == n-1 {
			size = bytes - (n-1)*mtu
		}
		s.queue = append(s.queue, packet{size: max(size, 50), src: i, frame: id})
	}
}

// pace forwards queued video packets at the publisher's pacing rate.
func (r *runner) pace(t time.Duration) {
	for i := range r.srcs {
		s := &r.srcs[i]
		for len(s.queue) > 0 && s.nextSend <= t {
			p := s.queue[0]
			s.queue = s.queue[1:]
			r.send(t, p)
			s.nextSend = max(s.nextSend, t-tick) + time.Duration(float64(p.size*8)/pacingRate*float64(time.Second))
		}
	}
}

func (r *runner) probe(t time.Duration) {
	r.est.SetWanted(r.al.Desired())
	if r.sc.NoProbe {
		return
	}
	rate, ok := r.est.ProbeWanted(r.now(t), r.al.Desired())
	if !ok {
		r.padCredit = 0
		return
	}
	r.padCredit += float64(rate) / 8 * tick.Seconds()
	size := int(math.Min(math.Max(float64(rate)/8*0.005, 300), mtu))
	for r.padCredit >= float64(size) {
		r.padCredit -= float64(size)
		r.send(t, packet{size: size, src: -2, frame: -1})
	}
}

func (r *runner) send(t time.Duration, p packet) {
	r.seq++
	r.est.OnSent(r.now(t), uint16(r.seq), p.size, p.src == -2)
	b := int(t/(10*time.Millisecond)) % len(r.sentBuckets)
	r.sentBuckets[b] += p.size
	if p.src == -2 {
		r.padBuckets[b] += p.size
	}
	if arr, ok := r.lnk.send(t, p.size); ok {
		r.flight = append(r.flight, inFlight{seq: r.seq, arrival: arr, p: p})
	} else if p.src >= 0 && !p.rtx {
		// The receiver NACKs it when a later packet shows the gap; the SFU
		// retransmits once from its cache, about a round trip later.
		p.rtx = true
		r.rtx = append(r.rtx, retransmission{at: t + 2*r.sc.Delay + 10*time.Millisecond, p: p})
	}
}

// retransmit sends the due retransmissions within a budget of rtxShare of the
// estimate (as an SFU must: answering every NACK after a capacity drop would
// flood the link with the backlog); those waiting longer than rtxMaxAge are
// dropped, their frames too late anyway.
func (r *runner) retransmit(t time.Duration) {
	r.rtxCredit = math.Min(r.rtxCredit+float64(r.est.Estimate())*rtxShare/8*tick.Seconds(), mtu*4)
	n := 0
	for n < len(r.rtx) && r.rtx[n].at <= t {
		x := r.rtx[n]
		if t-x.at > rtxMaxAge {
			n++
			continue
		}
		if r.rtxCredit < float64(x.p.size) {
			break
		}
		r.rtxCredit -= float64(x.p.size)
		r.send(t, x.p)
		n++
	}
	r.rtx = r.rtx[n:]
}

func (r *runner) rollMeters(t time.Duration) {
	if t%(10*time.Millisecond) == 0 {
		b := (int(t/(10*time.Millisecond)) + 1) % len(r.sentBuckets)
		r.sentBuckets[b], r.padBuckets[b], r.rxBuckets[b] = 0, 0, 0
	}
}

// receive takes the packets that arrived by t.
func (r *runner) receive(t time.Duration) {
	n := 0
	for n < len(r.flight) && r.flight[n].arrival <= t {
		f := r.flight[n]
		n++
		if f.p.src != -2 {
			r.rxBuckets[int(t/(10*time.Millisecond))%len(r.rxBuckets)] += f.p.size
		}
		arr := f.arrival + rxClock
		if r.recorder != nil {
			r.recorder.Record(1, uint16(f.seq), int64(arr/time.Microsecond))
		} else {
			r.rxArr[f.seq] = arr / twccUnit * twccUnit
			if f.seq > r.rxHigh {
				r.rxHigh = f.seq
			}
			if r.rxBase == 0 {
				r.rxBase = f.seq
			}
		}
		if f.p.frame >= 0 {
			r.frameGot[f.p.frame]++
			if r.frameGot[f.p.frame] == r.frameLen[f.p.frame] {
				src := r.frameSrc[f.p.frame]
				if sec := int(t / time.Second); sec < len(r.res.Frames[src]) {
					r.res.Frames[src][sec]++
				}
				delete(r.frameGot, f.p.frame)
				delete(r.frameLen, f.p.frame)
				delete(r.frameSrc, f.p.frame)
			}
		}
	}
	r.flight = r.flight[n:]
}

// feedback builds a transport-wide report of everything since the last one.
func (r *runner) feedback(t time.Duration) {
	at := t + r.sc.Delay
	if r.recorder != nil {
		for _, pkt := range r.recorder.BuildFeedbackPacket() {
			raw, err := pkt.Marshal()
			if err != nil {
				panic(err)
			}
			r.fbQueue = append(r.fbQueue, pendingFeedback{at: at, raw: raw})
		}
		return
	}
	if r.rxHigh < r.rxBase || r.rxBase == 0 {
		return
	}
	fb := bwe.Feedback{BaseSeq: uint16(r.rxBase)}
	for s := r.rxBase; s <= r.rxHigh; s++ {
		arr, ok := r.rxArr[s]
		fb.Packets = append(fb.Packets, bwe.Packet{Received: ok, Arrival: arr})
		delete(r.rxArr, s)
	}
	r.rxBase = r.rxHigh + 1
	r.fbQueue = append(r.fbQueue, pendingFeedback{at: at, fb: fb})
}

func (r *runner) deliverFeedback(t time.Duration) {
	n := 0
	for n < len(r.fbQueue) && r.fbQueue[n].at <= t {
		p := r.fbQueue[n]
		n++
		switch {
		case p.remb > 0:
			r.est.OnREMB(r.now(t), p.remb)
		case p.raw != nil:
			var cc rtcp.TransportLayerCC
			if err := cc.Unmarshal(p.raw); err != nil {
				panic(err)
			}
			if err := bwe.FromTransportCC(&r.fb, &cc); err != nil {
				panic(err)
			}
			r.est.OnFeedback(r.now(t), r.fb)
		default:
			r.est.OnFeedback(r.now(t), p.fb)
		}
	}
	r.fbQueue = r.fbQueue[n:]
}

func (r *runner) sample(t time.Duration) {
	sum, pad, rx := 0, 0, 0
	for i := range r.sentBuckets {
		sum += r.sentBuckets[i]
		pad += r.padBuckets[i]
		rx += r.rxBuckets[i]
	}
	tcp := 0
	for i := range r.tcp {
		tcp += r.tcp[i].rate()
	}
	s := Sample{
		T:        t,
		Capacity: r.lnk.capacity(t),
		Estimate: r.est.Estimate(),
		Sent:     sum * 8 * 2,
		Padding:  pad * 8 * 2,
		Queue:    r.lnk.QueueDelay(t),
		Media:    rx * 8 * 2,
		TCP:      tcp,
		Stats:    r.est.Stats(),
	}
	for i := range r.srcs {
		s.Picks = append(s.Picks, r.srcs[i].want)
	}
	r.res.Samples = append(r.res.Samples, s)
}
