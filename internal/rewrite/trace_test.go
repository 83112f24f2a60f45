package rewrite

import (
	"math/rand/v2"
	"slices"
	"time"

	"github.com/podium-sfu/podium/internal/media"
)

// The trace generator: a simulcast source sending three VP8 encodings at
// 30 fps with the L1T3 temporal pattern (TL0, TL2, TL1, TL2), key frames
// every N frames on each encoding independently, frames of 1 to 5 packets
// with the marker on the last, driven by a script of operations (target
// switches, temporal changes, pauses, restarts, loss, delay, duplicates,
// trouble around key frames). The same script bytes come from math/rand in
// the property test and from the fuzzer in FuzzProjector.
//
// Delays stay below maxTraceDelay and restarts come after a pause longer
// than that, so every late packet is inside the projector's windows and no
// packet of an old numbering arrives after the new one started.

const (
	frameRate     = 30
	frameTicks    = clockRate / frameRate
	maxTraceDelay = 350 * time.Millisecond
)

// captureAt is when frame f was captured, from the trace start.
func captureAt(f int) time.Duration { return time.Duration(f) * time.Second / frameRate }

// tpkt is one packet sent by the source, with the ground truth about it.
type tpkt struct {
	enc, epoch int
	idx        int // per encoding, counting every packet sent
	frame      *tframe
	first      bool // first packet of its frame
	buf        []byte
	hdr        media.RTPHeader
	vp8        media.VP8Descriptor
	lost       bool
	copies     []int // arrival indices, ascending
}

// tframe is one frame of one encoding.
type tframe struct {
	enc, epoch int
	f          int // capture index, shared by the encodings
	tid        uint8
	key, sync  bool
	refs       []*tframe
	pkts       []*tpkt
}

type arrival struct {
	p   *tpkt
	at  time.Time
	dup bool
}

// event is a call on the projector: SetTarget, or EncodingStopped if stop.
type event struct {
	at            time.Time
	stop          bool
	enc, temporal int
}

type trace struct {
	start    time.Time
	frames   int
	sent     [MaxEncodings][]*tpkt   // by idx
	fr       [MaxEncodings][]*tframe // in capture order
	arrivals []arrival               // in arrival order
	events   []event                 // in time order
}

// Script operations, three bytes each: frames to wait (low 3 bits), kind
// (mod 16; kinds past the list do nothing), argument.
const (
	opTarget        = iota // SetTarget(arg%3, arg>>2%3)
	opTemporal             // keep the encoding, max temporal arg%3
	opReceiverPause        // SetTarget(-1) for 3+arg>>2%30 frames, then back
	opSourceStop           // encoding arg%3 stops 12+arg>>2%32 frames, reported after 8; arg&0x80 restarts numbering; arg&0x40 retargets it on resume
	opLoss                 // the next 1+arg>>2%4 packets of encoding arg%3 are lost
	opDelay                // the next packet of encoding arg%3 is delayed
	opKeyframe             // encoding arg%3 sends a key frame now
	opDuplicate            // the next packet of encoding arg%3 arrives twice
	opMessKey              // trouble around the next key frame of encoding arg%3
	opRestart              // encoding arg%3 pauses 11+ frames, restarts numbering with a key frame, unreported
	opBlip                 // encoding arg%3 pauses 1..7 frames, same numbering, no key frame after
)

var traceDelays = []time.Duration{5, 10, 20, 40, 70, 100, 150, 220, 300}

type scriptOp struct {
	frame     int
	kind, arg byte
}

func parseScript(b []byte) []scriptOp {
	var ops []scriptOp
	f := 0
	for i := 0; i+2 < len(b); i += 3 {
		f += int(b[i] & 7)
		ops = append(ops, scriptOp{frame: f, kind: b[i+1] % 16, arg: b[i+2]})
	}
	return ops
}

// encGen is the sender of one encoding.
type encGen struct {
	enc                int
	ssrc               uint32
	seq                uint16
	tsBase             uint32
	pid                uint16
	pidBits            uint8
	tl0, keyidx        uint8
	hasT, hasK, ext    bool
	keyEvery, keyPhase int
	latency            time.Duration
	epoch, idx         int
	started            bool
	pausedUntil        int
	resumeKey, restart bool
	forceKey           bool
	pos                int
	lastTL0            *tframe
	lastTL1, lastTL2   *tframe
	lose, dup, mess    int
	delay              time.Duration
	prev               int // arrival index (in gen.arr) of the last packet sent, -1 if none
}

type pendingKind int

const (
	pendForceKey pendingKind = iota
	pendStopDetect
	pendRetarget // back to a resumed encoding, unless paused
	pendResume   // back from a receiver pause, unless retargeted since
)

type pending struct {
	frame int
	kind  pendingKind
	enc   int
}

type gen struct {
	r        *rand.Rand
	tr       *trace
	enc      [MaxEncodings]*encGen
	target   int
	temporal int
	pend     []pending
}

// genTrace builds a trace of frames frames from the script bytes; seed
// picks the noise (initial numbers, packet counts, jitter, layouts).
func genTrace(seed uint64, frames int, script []byte) *trace {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	g := &gen{r: r, tr: &trace{start: t0, frames: frames}, target: -1}
	for e := range MaxEncodings {
		eg := &encGen{
			enc: e, ssrc: r.Uint32(), seq: uint16(r.Uint32()), tsBase: r.Uint32(),
			pid: uint16(r.Uint32()) & pidMask, pidBits: 15, tl0: uint8(r.Uint32()), keyidx: uint8(r.Uint32()) & 0x1f,
			hasT: r.IntN(6) != 0, hasK: r.IntN(2) == 0, ext: r.IntN(2) == 0,
			keyEvery: 30 + r.IntN(90), latency: 20*time.Millisecond + time.Duration(e)*time.Millisecond,
			prev: -1,
		}
		eg.keyPhase = r.IntN(eg.keyEvery)
		if r.IntN(4) == 0 {
			eg.pidBits = 7
			eg.pid &= 0x7f
		}
		g.enc[e] = eg
	}
	ops := parseScript(script)
	join := r.IntN(20)
	g.setTarget(join, r.IntN(MaxEncodings), 2)
	oi := 0
	for f := 0; f < frames; f++ {
		g.runPending(f)
		for oi < len(ops) && ops[oi].frame+join <= f {
			if ops[oi].frame+join == f {
				g.apply(f, ops[oi])
			}
			oi++
		}
		for _, eg := range g.enc {
			g.emit(f, eg)
		}
	}
	g.finish()
	return g.tr
}

func (g *gen) at(f int) time.Time { return g.tr.start.Add(captureAt(f)) }

func (g *gen) setTarget(f, enc, temporal int) {
	g.tr.events = append(g.tr.events, event{at: g.at(f), enc: enc, temporal: temporal})
	if enc >= 0 && enc != g.target {
		// The receiver's PLI reaches the sender one round trip later.
		g.pend = append(g.pend, pending{frame: f + 2 + g.r.IntN(5), kind: pendForceKey, enc: enc})
	}
	g.target, g.temporal = enc, temporal
}

func (g *gen) runPending(f int) {
	rest := g.pend[:0]
	var due []pending
	for _, p := range g.pend {
		if p.frame <= f {
			due = append(due, p)
		} else {
			rest = append(rest, p)
		}
	}
	g.pend = rest
	for _, p := range due {
		switch p.kind {
		case pendForceKey:
			g.enc[p.enc].forceKey = true
		case pendStopDetect:
			g.tr.events = append(g.tr.events, event{at: g.at(f), stop: true, enc: p.enc})
			if g.target == p.enc {
				g.setTarget(f, g.otherEncoding(f, p.enc), g.temporal)
			}
		case pendRetarget:
			if g.target >= 0 {
				g.setTarget(f, p.enc, g.temporal)
			}
		case pendResume:
			if g.target < 0 {
				g.setTarget(f, p.enc, g.temporal)
			}
		}
	}
}

// otherEncoding picks a sending encoding other than e, or -1.
func (g *gen) otherEncoding(f, e int) int {
	for _, o := range []int{(e + 2) % 3, (e + 1) % 3} {
		if g.enc[o].pausedUntil <= f {
			return o
		}
	}
	return -1
}

func (g *gen) pause(f int, eg *encGen, frames int, restart, key bool) bool {
	if eg.pausedUntil > f {
		return false
	}
	eg.pausedUntil = f + frames
	eg.restart, eg.resumeKey = restart, key
	return true
}

func (g *gen) apply(f int, op scriptOp) {
	e := int(op.arg % 3)
	eg := g.enc[e]
	a := int(op.arg >> 2)
	switch op.kind {
	case opTarget:
		g.setTarget(f, e, a%3)
	case opTemporal:
		if g.target >= 0 {
			g.setTarget(f, g.target, int(op.arg%3))
		}
	case opReceiverPause:
		if g.target >= 0 {
			back := g.target
			g.setTarget(f, -1, g.temporal)
			g.pend = append(g.pend, pending{frame: f + 3 + a%30, kind: pendResume, enc: back})
		}
	case opSourceStop:
		n := 12 + a%32
		if g.pause(f, eg, n, op.arg&0x80 != 0, true) {
			g.pend = append(g.pend, pending{frame: f + 8, kind: pendStopDetect, enc: e})
			if op.arg&0x40 != 0 {
				g.pend = append(g.pend, pending{frame: f + n, kind: pendRetarget, enc: e})
			}
		}
	case opLoss:
		eg.lose += 1 + a%4
	case opDelay:
		eg.delay = traceDelays[a%len(traceDelays)] * time.Millisecond
	case opKeyframe:
		eg.forceKey = true
	case opDuplicate:
		eg.dup++
	case opMessKey:
		eg.mess = 1 + a%5
	case opRestart:
		g.pause(f, eg, 11+a%20, true, true)
	case opBlip:
		g.pause(f, eg, 1+a%7, false, false)
	}
}

// emit sends frame f of one encoding.
func (g *gen) emit(f int, eg *encGen) {
	r := g.r
	if f < eg.pausedUntil {
		return
	}
	if f == eg.pausedUntil && f > 0 {
		if eg.restart {
			eg.epoch++
			eg.seq += uint16(2000 + r.IntN(61536))
			eg.tsBase += 1<<30 + r.Uint32()%(1<<31)
			eg.pid = uint16(r.Uint32()) & pidMask
			eg.tl0 = uint8(r.Uint32())
			eg.keyidx = uint8(r.Uint32()) & 0x1f
			eg.restart = false
		}
		if eg.resumeKey {
			eg.forceKey = true
			eg.resumeKey = false
		}
	}
	fr := g.nextFrame(f, eg)
	g.tr.fr[eg.enc] = append(g.tr.fr[eg.enc], fr)
	g.packets(f, eg, fr)
}

// nextFrame decides frame f: key or not, temporal layer, layer sync and
// references, and moves the encoder's counters on.
func (g *gen) nextFrame(f int, eg *encGen) *tframe {
	r := g.r
	fr := &tframe{enc: eg.enc, epoch: eg.epoch, f: f}
	fr.key = eg.forceKey || !eg.started || (f+eg.keyPhase)%eg.keyEvery == 0
	if fr.key && eg.started {
		eg.keyidx = (eg.keyidx + 1) & 0x1f
	}
	eg.forceKey, eg.started = false, true
	eg.pid++
	if eg.pidBits == 7 {
		eg.pid &= 0x7f
	} else {
		eg.pid &= pidMask
	}
	switch {
	case fr.key:
		eg.pos = 0
		eg.lastTL0, eg.lastTL1, eg.lastTL2 = fr, nil, nil
		eg.tl0++
	case !eg.hasT || eg.pos%4 == 0:
		fr.refs = []*tframe{eg.lastTL0}
		eg.lastTL0 = fr
		eg.tl0++
	case eg.pos%4 == 2:
		fr.tid = 1
		fr.sync = eg.lastTL1 == nil || r.IntN(6) == 0
		fr.refs = []*tframe{eg.lastTL0}
		if !fr.sync {
			fr.refs = append(fr.refs, eg.lastTL1)
		}
		eg.lastTL1 = fr
	default:
		fr.tid = 2
		fr.sync = eg.lastTL2 == nil || r.IntN(6) == 0
		fr.refs = []*tframe{eg.lastTL0}
		if !fr.sync {
			if eg.lastTL1 != nil {
				fr.refs = append(fr.refs, eg.lastTL1)
			}
			fr.refs = append(fr.refs, eg.lastTL2)
		}
		eg.lastTL2 = fr
	}
	eg.pos++
	return fr
}

// packets sends the packets of frame fr with their loss, delay and
// duplication.
func (g *gen) packets(f int, eg *encGen, fr *tframe) {
	r := g.r
	n := 1 + r.IntN(5)
	if fr.key {
		n = 2 + r.IntN(4)
	}
	jitter := time.Duration(r.IntN(8000)) * time.Microsecond
	base := g.at(f).Add(eg.latency + jitter)
	mess := 0
	if fr.key && eg.mess != 0 {
		mess, eg.mess = eg.mess, 0
		if mess == 4 && eg.prev >= 0 {
			// The packet before the key frame arrives after its start.
			g.tr.arrivals[eg.prev].at = g.tr.arrivals[eg.prev].at.Add(60 * time.Millisecond)
		}
	}
	for k := range n {
		s := pktSpec{
			seq: eg.seq, ts: eg.tsBase + uint32(f*frameTicks), ssrc: eg.ssrc, marker: k == n-1, ext: eg.ext,
			pidBits: eg.pidBits, pid: eg.pid, hasL: eg.hasT, tl0: eg.tl0, hasT: eg.hasT, tid: fr.tid, sync: fr.sync,
			hasK: eg.hasK, keyidx: eg.keyidx, start: k == 0, key: fr.key && k == 0,
			body: []byte{byte(eg.enc), byte(eg.epoch), byte(eg.idx >> 16), byte(eg.idx >> 8), byte(eg.idx)},
		}
		p := &tpkt{enc: eg.enc, epoch: eg.epoch, idx: eg.idx, frame: fr, first: k == 0, buf: s.build()}
		if err := media.ParseRTPHeader(p.buf, &p.hdr); err != nil {
			panic(err)
		}
		if err := media.ParseVP8(p.hdr.Payload(p.buf), &p.vp8); err != nil {
			panic(err)
		}
		eg.seq++
		eg.idx++
		fr.pkts = append(fr.pkts, p)
		g.tr.sent[eg.enc] = append(g.tr.sent[eg.enc], p)

		at := base.Add(time.Duration(k) * 400 * time.Microsecond)
		switch {
		case mess == 1 && k == 0, mess == 5 && k == 1:
			p.lost = true
		case mess == 2 && k == 0:
			at = at.Add(time.Duration(10+r.IntN(50)) * time.Millisecond)
		case mess == 3 && k == 1:
			at = at.Add(40 * time.Millisecond)
		}
		if eg.lose > 0 {
			eg.lose--
			p.lost = true
		}
		if eg.delay > 0 {
			at = at.Add(eg.delay)
			eg.delay = 0
		}
		if p.lost {
			continue
		}
		eg.prev = len(g.tr.arrivals)
		g.tr.arrivals = append(g.tr.arrivals, arrival{p: p, at: at})
		if eg.dup > 0 {
			eg.dup--
			g.tr.arrivals = append(g.tr.arrivals, arrival{p: p, at: at.Add(time.Duration(r.IntN(50000)) * time.Microsecond), dup: true})
		}
	}
}

// finish puts the arrivals in time order and indexes them.
func (g *gen) finish() {
	tr := g.tr
	slices.SortStableFunc(tr.arrivals, func(a, b arrival) int { return a.at.Compare(b.at) })
	for i := range tr.arrivals {
		a := &tr.arrivals[i]
		a.dup = len(a.p.copies) > 0
		a.p.copies = append(a.p.copies, i)
	}
	slices.SortStableFunc(tr.events, func(a, b event) int { return a.at.Compare(b.at) })
}

// result is what the projector did with one arrival.
type result struct {
	out      Output
	fwd      bool
	target   int // SetTarget in force when the packet was projected
	temporal int
	current  int // Current() after
	wantEnc  int
	wantOK   bool
}

// runTrace feeds the trace to a fresh projector in arrival order, making
// the projector calls of the events due before each packet.
func runTrace(tr *trace) []result {
	pr := NewProjector()
	res := make([]result, len(tr.arrivals))
	target, temporal := -1, 0
	ei := 0
	for i := range tr.arrivals {
		a := &tr.arrivals[i]
		for ; ei < len(tr.events) && !tr.events[ei].at.After(a.at); ei++ {
			ev := tr.events[ei]
			if ev.stop {
				pr.EncodingStopped(ev.enc)
			} else {
				pr.SetTarget(ev.enc, ev.temporal)
				target, temporal = ev.enc, ev.temporal
			}
		}
		p := a.p
		out, fwd := pr.Project(a.at, p.enc, &p.hdr, &p.vp8, p.vp8.IsKeyframe())
		we, wok := pr.WantsKeyframe()
		res[i] = result{out: out, fwd: fwd, target: target, temporal: temporal, current: pr.Current(), wantEnc: we, wantOK: wok}
	}
	return res
}
