package rewrite

import (
	"bytes"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/podium-sfu/podium/internal/media"
)

// The trace checker: the invariants a receiver relies on, checked against
// the generator's ground truth.

// segment is a run of forwarded packets of one encoding and numbering
// between two starts at key frames.
type segment struct {
	enc, epoch int
	k          int   // arrival index of the key frame packet that began it
	end        int   // arrival index from which the segment no longer runs
	members    []int // arrival indices of its forwarded packets
}

type checker struct {
	t      testing.TB
	tr     *trace
	res    []result
	outExt []int64 // extended output sequence number by arrival index
}

func checkTrace(t testing.TB, tr *trace, res []result) {
	t.Helper()
	c := &checker{t: t, tr: tr, res: res, outExt: make([]int64, len(res))}
	c.checkCalls()
	segs := c.segments()
	infos := make([]*segInfo, len(segs))
	for j, s := range segs {
		infos[j] = c.checkSegment(s)
	}
	c.checkJoins(infos)
	c.checkOrder(segs)
	c.checkApply()
}

func (c *checker) fail(i int, format string, args ...any) {
	c.t.Helper()
	a := c.tr.arrivals[i]
	c.t.Fatalf("arrival %d (enc %d epoch %d idx %d frame %d at %v): "+format,
		append([]any{i, a.p.enc, a.p.epoch, a.p.idx, a.p.frame.f, a.at.Sub(c.tr.start)}, args...)...)
}

// checkCalls: a target key frame always makes the target current; key
// frames are wanted exactly while the target is not being forwarded;
// nothing runs without a target.
func (c *checker) checkCalls() {
	for i, r := range c.res {
		p := c.tr.arrivals[i].p
		if r.target >= 0 && p.enc == r.target && p.vp8.IsKeyframe() && r.current != r.target {
			c.fail(i, "key frame of the target %d left Current() at %d", r.target, r.current)
		}
		if r.target < 0 && (r.current != -1 || r.fwd) {
			c.fail(i, "no target but current %d, forwarded %v", r.current, r.fwd)
		}
		want := r.target >= 0 && r.current != r.target
		if r.wantOK != want || want && r.wantEnc != r.target {
			c.fail(i, "WantsKeyframe = %d, %v with target %d current %d", r.wantEnc, r.wantOK, r.target, r.current)
		}
	}
}

// stallBetween reports whether forwarding of enc had to stop between two
// instants (after from, up to to): a pause of the receiver or enc stopping.
func (c *checker) stallBetween(from, to time.Time, enc int) bool {
	ev := c.tr.events
	for j := sort.Search(len(ev), func(j int) bool { return ev[j].at.After(from) }); j < len(ev) && !ev[j].at.After(to); j++ {
		if ev[j].stop && ev[j].enc == enc || !ev[j].stop && ev[j].enc < 0 {
			return true
		}
	}
	return false
}

// segments splits the forwarded packets where the ground truth says a new
// start is due (another encoding, a new numbering, after a stall) and checks
// that each start is a target key frame flagged with SwitchedTo and that no
// other packet is.
func (c *checker) segments() []*segment {
	var segs []*segment
	prev := -1
	for i, r := range c.res {
		if !r.fwd {
			continue
		}
		a := c.tr.arrivals[i]
		if r.current != a.p.enc {
			c.fail(i, "forwarded while Current() = %d", r.current)
		}
		start, resync := prev < 0, false
		if !start {
			pa := c.tr.arrivals[prev]
			stall := c.stallBetween(pa.at, a.at, pa.p.enc)
			start = pa.p.enc != a.p.enc || pa.p.epoch != a.p.epoch || stall
			// The source restarted the encoding being forwarded: it goes
			// on from the new numbering even while a switch is pending.
			resync = pa.p.enc == a.p.enc && pa.p.epoch != a.p.epoch && !stall
			d := int64(int16(r.out.SequenceNumber - c.res[prev].out.SequenceNumber))
			c.outExt[i] = c.outExt[prev] + d
		} else {
			c.outExt[i] = 1 << 32
		}
		if start {
			if !a.p.vp8.IsKeyframe() {
				c.fail(i, "segment starts without a key frame")
			}
			if r.target != a.p.enc && !resync {
				c.fail(i, "switched to %d, target %d", a.p.enc, r.target)
			}
			if r.out.SwitchedTo != a.p.enc {
				c.fail(i, "segment start with SwitchedTo %d", r.out.SwitchedTo)
			}
			segs = append(segs, &segment{enc: a.p.enc, epoch: a.p.epoch, k: i, end: len(c.res)})
		} else if r.out.SwitchedTo != -1 {
			c.fail(i, "unexpected SwitchedTo %d", r.out.SwitchedTo)
		}
		s := segs[len(segs)-1]
		s.members = append(s.members, i)
		prev = i
	}
	for j, s := range segs {
		if j+1 < len(segs) {
			s.end = segs[j+1].k
		}
		kAt := c.tr.arrivals[s.k].at
		for i := s.k + 1; i < s.end; i++ {
			a := c.tr.arrivals[i]
			if a.p.enc == s.enc && a.p.epoch > s.epoch || c.stallBetween(kAt, a.at, s.enc) {
				s.end = i
				break
			}
		}
	}
	return segs
}

// segInfo is the ground truth of one segment's input, seen from its start.
type segInfo struct {
	s      *segment
	rel    map[*tpkt]int  // the copy the segment processes: the first at or after its start
	late   map[*tpkt]bool // that copy came after a newer packet of the segment
	fwd    map[*tpkt]int  // arrival index of the forwarded copy
	frames []*tframe      // the encoding's frames from the start's frame on
	first  map[*tframe]int
	later  map[*tframe]int
	top    *tpkt // the newest packet the segment took in
	// output minus input, fixed for the segment
	tsOff          uint32
	tl0Off, keyOff uint8
}

const never = int(^uint(0) >> 1)

func (c *checker) info(s *segment) *segInfo {
	in := &segInfo{s: s, rel: map[*tpkt]int{}, late: map[*tpkt]bool{}, fwd: map[*tpkt]int{},
		first: map[*tframe]int{}, later: map[*tframe]int{}}
	maxIdx := -1
	for i := s.k; i < len(c.tr.arrivals); i++ {
		p := c.tr.arrivals[i].p
		if p.enc != s.enc || p.epoch != s.epoch {
			continue
		}
		if _, ok := in.rel[p]; !ok {
			in.rel[p] = i
			in.late[p] = maxIdx > p.idx
		}
		maxIdx = max(maxIdx, p.idx)
		if i < s.end && (in.top == nil || p.idx > in.top.idx) {
			in.top = p
		}
	}
	for _, i := range s.members {
		p := c.tr.arrivals[i].p
		if _, ok := in.fwd[p]; ok {
			c.fail(i, "forwarded twice")
		}
		in.fwd[p] = i
	}
	kf := c.tr.arrivals[s.k].p.frame
	for _, f := range c.tr.fr[s.enc] {
		if f.epoch == s.epoch && f.f >= kf.f {
			in.frames = append(in.frames, f)
		}
	}
	later := never
	for j := len(in.frames) - 1; j >= 0; j-- {
		f := in.frames[j]
		first := never
		for _, p := range f.pkts {
			if r, ok := in.rel[p]; ok {
				first = min(first, r)
			}
		}
		in.first[f], in.later[f] = first, later
		later = min(later, first)
	}
	return in
}

// hole reports whether p's output slot stays empty: it was lost, never
// reached the segment, or came late and was not forwarded.
func (in *segInfo) hole(p *tpkt) bool {
	if _, ok := in.fwd[p]; ok {
		return false
	}
	_, arrived := in.rel[p]
	return p.lost || !arrived || in.late[p]
}

func (in *segInfo) frameForwarded(f *tframe) (int, bool) {
	for _, p := range f.pkts {
		if i, ok := in.fwd[p]; ok {
			return i, true
		}
	}
	return 0, false
}

// frameHole reports whether frame f's picture id stays empty: not
// forwarded, and a newer frame reached the projector before it did.
func (in *segInfo) frameHole(f *tframe) bool {
	_, fwd := in.frameForwarded(f)
	return !fwd && in.first[f] > in.later[f]
}

// impaired reports whether the network, not the projector, may have kept
// frame f from being forwarded.
func (in *segInfo) impaired(f *tframe) bool {
	if in.first[f] > in.later[f] {
		return true
	}
	for _, p := range f.pkts {
		if _, arrived := in.rel[p]; p.lost || !arrived || in.late[p] {
			return true
		}
	}
	return false
}

func (c *checker) checkSegment(s *segment) *segInfo {
	in := c.info(s)
	c.checkSequence(in)
	c.checkOffsets(in)
	c.checkFrames(in)
	return in
}

// checkSequence: in input order, each output sequence step is one plus the
// slots left empty by loss or lateness; dropped packets leave none.
func (c *checker) checkSequence(in *segInfo) {
	s, arr, sent := in.s, c.tr.arrivals, c.tr.sent[in.s.enc]
	mem := slices.Clone(s.members)
	slices.SortFunc(mem, func(a, b int) int { return arr[a].p.idx - arr[b].p.idx })
	for j := 1; j < len(mem); j++ {
		a, b := mem[j-1], mem[j]
		holes := 0
		for idx := arr[a].p.idx + 1; idx < arr[b].p.idx; idx++ {
			if in.hole(sent[idx]) {
				holes++
			}
		}
		if got := c.outExt[b] - c.outExt[a]; got != int64(1+holes) {
			c.fail(b, "output sequence step %d from input idx %d, want %d (%d holes)", got, arr[a].p.idx, 1+holes, holes)
		}
	}

}

// checkOffsets: timestamps, TL0PICIDX and KEYIDX keep one offset per
// segment, and the marker passes through.
func (c *checker) checkOffsets(in *segInfo) {
	s, arr := in.s, c.tr.arrivals
	k := c.res[s.k].out
	kp := arr[s.k].p
	tsOff := k.Timestamp - kp.hdr.Timestamp
	tl0Off := k.TL0PICIDX - kp.vp8.TL0PICIDX
	keyOff := (k.KEYIDX - kp.vp8.KEYIDX) & 0x1f
	in.tsOff, in.tl0Off, in.keyOff = tsOff, tl0Off, keyOff
	for _, i := range s.members {
		o, p := c.res[i].out, arr[i].p
		if o.Timestamp-p.hdr.Timestamp != tsOff {
			c.fail(i, "timestamp offset %d, segment's %d", o.Timestamp-p.hdr.Timestamp, tsOff)
		}
		if p.vp8.HasTL0PICIDX && o.TL0PICIDX-p.vp8.TL0PICIDX != tl0Off {
			c.fail(i, "TL0PICIDX offset changed within the segment")
		}
		if p.vp8.HasKEYIDX && (o.KEYIDX-p.vp8.KEYIDX)&0x1f != keyOff {
			c.fail(i, "KEYIDX offset changed within the segment")
		}
		if o.Marker != p.hdr.Marker {
			c.fail(i, "marker changed")
		}
	}

}

// checkFrames: one picture id per frame, +1 per forwarded frame except over
// frames the network lost; forwarded frames complete, within the temporal
// target, and never referencing a frame the projector chose to drop.
func (c *checker) checkFrames(in *segInfo) {
	s := in.s
	kf := c.tr.arrivals[s.k].p.frame
	var prev *tframe
	var prevPID uint16
	for _, f := range in.frames {
		fi, fwd := in.frameForwarded(f)
		if !fwd {
			continue
		}
		pid := c.res[fi].out.PictureID
		for _, p := range f.pkts {
			if i, ok := in.fwd[p]; ok && c.res[i].out.PictureID != pid {
				c.fail(i, "picture id %d within a frame of %d", c.res[i].out.PictureID, pid)
			}
			if r, arrived := in.rel[p]; arrived && r < s.end {
				if _, ok := in.fwd[p]; !ok {
					c.fail(r, "packet of a forwarded frame dropped")
				}
			}
		}
		if prev != nil {
			holes := 0
			for _, h := range in.frames {
				if h.f > prev.f && h.f < f.f && in.frameHole(h) {
					holes++
				}
			}
			if d := (pid - prevPID) & pidMask; d != uint16(1+holes) {
				c.fail(fi, "picture id step %d after frame %d, want %d", d, prev.f, 1+holes)
			}
		}
		if t0 := min(in.first[f], in.later[f]); c.res[t0].temporal < int(f.tid) {
			c.fail(fi, "TID %d forwarded with max temporal %d", f.tid, c.res[t0].temporal)
		}
		for _, r := range f.refs {
			if r.f < kf.f {
				c.fail(fi, "references frame %d from before the segment's key frame %d", r.f, kf.f)
			}
			if _, ok := in.frameForwarded(r); !ok && !in.impaired(r) {
				c.fail(fi, "TID %d frame forwarded but its reference %d (TID %d) was dropped", f.tid, r.f, r.tid)
			}
		}
		prev, prevPID = f, pid
	}
}

// checkJoins: each segment continues the previous one. The sequence
// number and picture id follow the last forwarded ones and the slots
// reserved after them for packets lost or late; the timestamp advances by
// the wall time since the last forwarded packet; TL0PICIDX and KEYIDX go one
// above those of the newest packet taken in.
func (c *checker) checkJoins(infos []*segInfo) {
	for j, in := range infos {
		s := in.s
		k, kp := c.res[s.k].out, c.tr.arrivals[s.k].p
		if j == 0 {
			if k.SequenceNumber != kp.hdr.SequenceNumber || k.Timestamp != kp.hdr.Timestamp ||
				k.PictureID != kp.vp8.PictureID || k.TL0PICIDX != kp.vp8.TL0PICIDX || k.KEYIDX != kp.vp8.KEYIDX {
				c.fail(s.k, "first packet rewritten: %+v", k)
			}
			continue
		}
		pin := infos[j-1]
		last := slices.MaxFunc(pin.s.members, func(a, b int) int { return int(c.outExt[a] - c.outExt[b]) })
		l, lp := c.res[last].out, c.tr.arrivals[last].p
		holes := 0
		for idx := lp.idx + 1; idx < pin.top.idx; idx++ {
			if pin.hole(c.tr.sent[pin.s.enc][idx]) {
				holes++
			}
		}
		if got := c.outExt[s.k] - c.outExt[last]; got != int64(1+holes) {
			c.fail(s.k, "sequence steps by %d at the switch, want %d (%d holes)", got, 1+holes, holes)
		}
		elapsed := c.tr.arrivals[s.k].at.Sub(c.tr.arrivals[last].at)
		if want := uint32(max(1, int64(elapsed)*9/100000)); k.Timestamp-l.Timestamp != want {
			c.fail(s.k, "timestamp step %d at the switch after %v, want %d", int32(k.Timestamp-l.Timestamp), elapsed, want)
		}
		if kp.vp8.HasPictureID && lp.vp8.HasPictureID {
			holes := 0
			for _, h := range pin.frames {
				if h.f > lp.frame.f && h.f < pin.top.frame.f && pin.frameHole(h) {
					holes++
				}
			}
			if d := (k.PictureID - l.PictureID) & pidMask; d != uint16(1+holes) {
				c.fail(s.k, "picture id steps by %d at the switch, want %d", d, 1+holes)
			}
		}
		top := pin.top.vp8
		if kp.vp8.HasTL0PICIDX && top.HasTL0PICIDX && k.TL0PICIDX != top.TL0PICIDX+pin.tl0Off+1 {
			c.fail(s.k, "TL0PICIDX %d after %d at the switch", k.TL0PICIDX, top.TL0PICIDX+pin.tl0Off)
		}
		if kp.vp8.HasKEYIDX && top.HasKEYIDX && k.KEYIDX != (top.KEYIDX+pin.keyOff+1)&0x1f {
			c.fail(s.k, "KEYIDX %d after %d at the switch", k.KEYIDX, (top.KEYIDX+pin.keyOff)&0x1f)
		}
	}
}

// checkOrder: over the whole output, sequence numbers are unique,
// timestamps never go backwards in sequence order, and timestamps follow
// capture time up to the network delay spread at each switch.
func (c *checker) checkOrder(segs []*segment) {
	var all []int
	for _, s := range segs {
		all = append(all, s.members...)
	}
	if len(all) == 0 {
		return
	}
	slices.SortFunc(all, func(a, b int) int { return int(c.outExt[a] - c.outExt[b]) })
	minD, maxD := time.Duration(1<<62), time.Duration(0)
	for _, a := range c.tr.arrivals {
		d := a.at.Sub(c.tr.start) - captureAt(a.p.frame.f)
		minD, maxD = min(minD, d), max(maxD, d)
	}
	bound := int64(len(segs)-1) * (ticks(maxD-minD) + 3)
	f0, ts0 := c.tr.arrivals[all[0]].p.frame.f, c.res[all[0]].out.Timestamp
	for j, i := range all {
		o := c.res[i].out
		if j > 0 {
			prev := all[j-1]
			if c.outExt[i] == c.outExt[prev] {
				c.fail(i, "output sequence number %d used twice", o.SequenceNumber)
			}
			if d := int32(o.Timestamp - c.res[prev].out.Timestamp); d < 0 {
				c.fail(i, "timestamp goes back by %d", -d)
			}
		}
		drift := int64(int32(o.Timestamp-ts0)) - int64(c.tr.arrivals[i].p.frame.f-f0)*frameTicks
		if drift > bound || drift < -bound {
			c.fail(i, "timestamp %d ticks off capture time, bound %d", drift, bound)
		}
	}
}

// checkApply: Apply writes exactly the output values into a copy.
func (c *checker) checkApply() {
	for i, r := range c.res {
		if r.fwd {
			checkApplied(c.t, c.tr.arrivals[i].p.buf, r.out)
		}
	}
}

func checkApplied(t testing.TB, orig []byte, out Output) {
	t.Helper()
	var h0, h1 media.RTPHeader
	var d0, d1 media.VP8Descriptor
	if err := media.ParseRTPHeader(orig, &h0); err != nil {
		t.Fatal(err)
	}
	if err := media.ParseVP8(h0.Payload(orig), &d0); err != nil {
		t.Fatal(err)
	}
	b := slices.Clone(orig)
	if err := Apply(b, &h0, out); err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if err := media.ParseRTPHeader(b, &h1); err != nil {
		t.Fatalf("rewritten header: %v", err)
	}
	if err := media.ParseVP8(h1.Payload(b), &d1); err != nil {
		t.Fatalf("rewritten descriptor: %v", err)
	}
	if h1.SequenceNumber != out.SequenceNumber || h1.Timestamp != out.Timestamp || h1.Marker != out.Marker {
		t.Fatalf("header %d/%d/%v, want %+v", h1.SequenceNumber, h1.Timestamp, h1.Marker, out)
	}
	if h1.SSRC != h0.SSRC || h1.PayloadType != h0.PayloadType || !bytes.Equal(b[8:h0.PayloadOffset], orig[8:h0.PayloadOffset]) {
		t.Fatalf("SSRC, payload type or extensions changed")
	}
	want := d0
	if d0.HasPictureID {
		want.PictureID = out.PictureID & (1<<d0.PictureIDBits - 1)
	}
	if d0.HasTL0PICIDX {
		want.TL0PICIDX = out.TL0PICIDX
	}
	if d0.HasKEYIDX {
		want.KEYIDX = out.KEYIDX & 0x1f
	}
	if d1 != want {
		t.Fatalf("descriptor\n got %+v\nwant %+v", d1, want)
	}
	if !bytes.Equal(b[h0.PayloadOffset+d0.HeaderLen:], orig[h0.PayloadOffset+d0.HeaderLen:]) {
		t.Fatalf("VP8 data changed")
	}
}
