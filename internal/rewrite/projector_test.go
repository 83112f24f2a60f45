package rewrite

import (
	"testing"
	"time"
)

// src is a hand-driven encoding for the unit tests.
type src struct {
	enc    int
	seq    uint16
	ts     uint32
	pid    uint16
	bits   uint8 // picture id width; 0 for none
	tl0    uint8
	keyidx uint8
	noT    bool // no TL0PICIDX / TID fields
	hasK   bool
}

func newSrc(enc int, seq uint16, ts uint32, pid uint16, tl0 uint8) *src {
	return &src{enc: enc, seq: seq, ts: ts, pid: pid, bits: 15, tl0: tl0, hasK: true}
}

// frame returns the n packets of the next frame (TID tid, layer sync).
func (s *src) frame(t testing.TB, key bool, tid uint8, sync bool, n int) []*parsed {
	t.Helper()
	s.pid++
	if s.bits == 7 {
		s.pid &= 0x7f
	} else {
		s.pid &= pidMask
	}
	if key || tid == 0 {
		s.tl0++
	}
	if key {
		s.keyidx = (s.keyidx + 1) & 0x1f
	}
	var ps []*parsed
	for k := range n {
		sp := pktSpec{
			seq: s.seq, ts: s.ts, ssrc: uint32(100 + s.enc), marker: k == n-1,
			pidBits: s.bits, pid: s.pid, hasL: !s.noT, tl0: s.tl0, hasT: !s.noT, tid: tid, sync: sync,
			hasK: s.hasK, keyidx: s.keyidx, start: k == 0, key: key && k == 0, body: []byte{1, 2, 3},
		}
		ps = append(ps, parse(t, sp.build()))
		s.seq++
	}
	s.ts += frameTicks
	return ps
}

// key and delta are the common frames.
func (s *src) key(t testing.TB) []*parsed   { return s.frame(t, true, 0, false, 2) }
func (s *src) delta(t testing.TB) []*parsed { return s.frame(t, false, 0, false, 2) }

// run projects packets of s arriving at now and returns what was forwarded.
func run(pr *Projector, now time.Time, s *src, ps []*parsed) []Output {
	var outs []Output
	for _, p := range ps {
		if o, ok := feed(pr, now, s.enc, p); ok {
			outs = append(outs, o)
		}
	}
	return outs
}

func mustForward(t *testing.T, outs []Output, n int) []Output {
	t.Helper()
	if len(outs) != n {
		t.Fatalf("forwarded %d packets, want %d: %+v", len(outs), n, outs)
	}
	return outs
}

func TestNothingBeforeKeyframe(t *testing.T) {
	pr := NewProjector()
	low, high := newSrc(0, 100, 1000, 10, 5), newSrc(1, 200, 2000, 20, 6)
	mustForward(t, run(pr, ms(0), low, low.key(t)), 0) // no target yet
	if e, ok := pr.WantsKeyframe(); ok {
		t.Fatalf("WantsKeyframe = %d without a target", e)
	}
	pr.SetTarget(1, 2)
	if e, ok := pr.WantsKeyframe(); !ok || e != 1 {
		t.Fatalf("WantsKeyframe = %d, %v; want 1", e, ok)
	}
	mustForward(t, run(pr, ms(33), high, high.delta(t)), 0)
	mustForward(t, run(pr, ms(33), low, low.key(t)), 0) // not the target
	if pr.Current() != -1 {
		t.Fatalf("Current = %d before any key frame", pr.Current())
	}
	in := high.key(t)
	outs := mustForward(t, run(pr, ms(66), high, in), 2)
	o := outs[0]
	if o.SwitchedTo != 1 || outs[1].SwitchedTo != -1 {
		t.Fatalf("SwitchedTo %d, %d", o.SwitchedTo, outs[1].SwitchedTo)
	}
	// The first segment keeps the source's numbers.
	if o.SequenceNumber != in[0].hdr.SequenceNumber || o.Timestamp != in[0].hdr.Timestamp ||
		o.PictureID != in[0].vp8.PictureID || o.TL0PICIDX != in[0].vp8.TL0PICIDX || o.KEYIDX != in[0].vp8.KEYIDX {
		t.Fatalf("first packet rewritten: %+v", o)
	}
	if _, ok := pr.WantsKeyframe(); ok || pr.Current() != 1 {
		t.Fatalf("after the key frame: Current %d, still wanting a key frame", pr.Current())
	}
}

// switchCase checks every output counter across one switch.
func checkSwitch(t *testing.T, last, first Output, elapsed time.Duration, to int) {
	t.Helper()
	if first.SwitchedTo != to {
		t.Errorf("SwitchedTo = %d, want %d", first.SwitchedTo, to)
	}
	if first.SequenceNumber != last.SequenceNumber+1 {
		t.Errorf("sequence %d after %d", first.SequenceNumber, last.SequenceNumber)
	}
	if want := last.Timestamp + uint32(max(1, ticks(elapsed))); first.Timestamp != want {
		t.Errorf("timestamp %d after %d (%v later), want %d", first.Timestamp, last.Timestamp, elapsed, want)
	}
	if first.PictureID != (last.PictureID+1)&pidMask {
		t.Errorf("picture id %d after %d", first.PictureID, last.PictureID)
	}
	if first.TL0PICIDX != last.TL0PICIDX+1 {
		t.Errorf("TL0PICIDX %d after %d", first.TL0PICIDX, last.TL0PICIDX)
	}
	if first.KEYIDX != (last.KEYIDX+1)&0x1f {
		t.Errorf("KEYIDX %d after %d", first.KEYIDX, last.KEYIDX)
	}
}

func TestSwitchUpAndDown(t *testing.T) {
	pr := NewProjector()
	pr.SetTarget(0, 2)
	low, high := newSrc(0, 40000, 5000, 300, 7), newSrc(2, 9, 4e9, 32000, 250)
	outs := run(pr, ms(0), low, low.key(t))
	outs = append(outs, run(pr, ms(33), low, low.delta(t))...)
	mustForward(t, outs, 4)

	pr.SetTarget(2, 2) // up: the low encoding flows until the high key frame
	mustForward(t, run(pr, ms(66), high, high.delta(t)), 0)
	outs = mustForward(t, run(pr, ms(67), low, low.delta(t)), 2)
	last := outs[1]
	if e, ok := pr.WantsKeyframe(); !ok || e != 2 {
		t.Fatalf("WantsKeyframe = %d, %v during the switch", e, ok)
	}
	up := mustForward(t, run(pr, ms(90.5), high, high.key(t)), 2)
	checkSwitch(t, last, up[0], 23500*time.Microsecond, 2)
	mustForward(t, run(pr, ms(100), low, low.delta(t)), 0) // the old one stops
	more := mustForward(t, run(pr, ms(123), high, high.delta(t)), 2)
	if more[0].SequenceNumber != up[1].SequenceNumber+1 || more[0].Timestamp != up[1].Timestamp+frameTicks {
		t.Fatalf("within the new encoding: %+v after %+v", more[0], up[1])
	}

	pr.SetTarget(0, 2) // down
	mustForward(t, run(pr, ms(130), low, low.delta(t)), 0)
	mustForward(t, run(pr, ms(156), high, high.delta(t)), 2)
	last = run(pr, ms(189), high, high.delta(t))[1]
	down := mustForward(t, run(pr, ms(200), low, low.key(t)), 2)
	checkSwitch(t, last, down[0], 11*time.Millisecond, 0)
	if pr.Current() != 0 {
		t.Fatalf("Current = %d", pr.Current())
	}
}

func TestEncodingStopped(t *testing.T) {
	pr := NewProjector()
	pr.SetTarget(2, 2)
	mid, high := newSrc(1, 1, 1, 1, 1), newSrc(2, 500, 500, 500, 50)
	mustForward(t, run(pr, ms(0), high, high.key(t)), 2)
	last := run(pr, ms(33), high, high.delta(t))[1]

	pr.EncodingStopped(1) // not the current one: no effect
	if pr.Current() != 2 {
		t.Fatalf("Current = %d after another encoding stopped", pr.Current())
	}
	pr.SetTarget(1, 2)
	pr.EncodingStopped(2)
	if pr.Current() != -1 {
		t.Fatalf("Current = %d after it stopped", pr.Current())
	}
	mustForward(t, run(pr, ms(40), high, high.delta(t)), 0) // stragglers
	mustForward(t, run(pr, ms(66), mid, mid.delta(t)), 0)
	first := mustForward(t, run(pr, ms(500), mid, mid.key(t)), 2)
	checkSwitch(t, last, first[0], 467*time.Millisecond, 1)
}

func TestReceiverPause(t *testing.T) {
	pr := NewProjector()
	pr.SetTarget(0, 2)
	s := newSrc(0, 7, 7, 7, 7)
	mustForward(t, run(pr, ms(0), s, s.key(t)), 2)
	last := run(pr, ms(33), s, s.delta(t))[1]
	pr.SetTarget(-1, 2)
	if pr.Current() != -1 {
		t.Fatal("still current while paused")
	}
	mustForward(t, run(pr, ms(66), s, s.key(t)), 0)
	pr.SetTarget(0, 2)
	mustForward(t, run(pr, ms(3000), s, s.delta(t)), 0) // needs a key frame
	first := mustForward(t, run(pr, ms(3033), s, s.key(t)), 2)
	checkSwitch(t, last, first[0], 3*time.Second, 0)
}

func TestSetTargetClamps(t *testing.T) {
	pr := NewProjector()
	for _, enc := range []int{-7, MaxEncodings, 99} {
		pr.SetTarget(enc, 2)
		if e, ok := pr.WantsKeyframe(); ok {
			t.Errorf("SetTarget(%d): wants a key frame of %d", enc, e)
		}
	}
	pr.SetTarget(0, 9)
	s := newSrc(0, 1, 1, 1, 1)
	run(pr, ms(0), s, s.key(t))
	if pr.Temporal() != maxTID {
		t.Errorf("Temporal = %d, want %d", pr.Temporal(), maxTID)
	}
	pr.SetTarget(0, -3)
	run(pr, ms(33), s, s.delta(t))
	if pr.Temporal() != 0 {
		t.Errorf("Temporal = %d, want 0", pr.Temporal())
	}
	// Packets of an encoding out of range are never forwarded.
	if _, ok := pr.Project(ms(40), 5, &s.key(t)[0].hdr, nil, true); ok {
		t.Error("encoding 5 forwarded")
	}
	if _, ok := pr.Project(ms(40), 0, nil, nil, true); ok {
		t.Error("nil header forwarded")
	}
}

// l1t3 sends n frames of the L1T3 pattern after a key frame: TL0, TL2,
// TL1, TL2; syncs says which TIDs carry the layer sync bit.
func l1t3(t *testing.T, pr *Projector, s *src, start time.Time, n int, syncs map[uint8]bool) (in, out int, outs []Output) {
	pattern := []uint8{0, 2, 1, 2}
	for i := range n {
		tid := pattern[(i+1)%4]
		ps := s.frame(t, false, tid, syncs[tid], 1+i%3)
		in += len(ps)
		o := run(pr, start.Add(time.Duration(i+1)*33*time.Millisecond), s, ps)
		if len(o) != 0 && len(o) != len(ps) {
			t.Fatalf("frame %d partly forwarded", i)
		}
		out += len(o)
		outs = append(outs, o...)
	}
	return in, out, outs
}

// checkContiguous: no gaps in sequence numbers, +1 picture id per frame,
// TL0PICIDX never moving by more than one.
func checkContiguous(t *testing.T, outs []Output) {
	t.Helper()
	for i := 1; i < len(outs); i++ {
		a, b := outs[i-1], outs[i]
		if b.SequenceNumber != a.SequenceNumber+1 {
			t.Fatalf("sequence %d after %d", b.SequenceNumber, a.SequenceNumber)
		}
		if d := (b.PictureID - a.PictureID) & pidMask; d > 1 || d == 0 && b.Timestamp != a.Timestamp {
			t.Fatalf("picture id %d after %d", b.PictureID, a.PictureID)
		}
		if d := b.TL0PICIDX - a.TL0PICIDX; d > 1 {
			t.Fatalf("TL0PICIDX %d after %d", b.TL0PICIDX, a.TL0PICIDX)
		}
		if int32(b.Timestamp-a.Timestamp) < 0 {
			t.Fatalf("timestamp %d after %d", b.Timestamp, a.Timestamp)
		}
	}
}

func TestTemporalLayers(t *testing.T) {
	pr := NewProjector()
	pr.SetTarget(0, 0)
	s := newSrc(0, 65500, 1, 32760, 254) // all three counters wrap on the way
	outs := mustForward(t, run(pr, ms(0), s, s.key(t)), 2)
	_, n, o := l1t3(t, pr, s, ms(0), 40, map[uint8]bool{1: true, 2: true})
	outs = append(outs, o...)
	if pr.Temporal() != 0 || n == 0 {
		t.Fatalf("Temporal = %d, %d forwarded", pr.Temporal(), n)
	}
	checkContiguous(t, outs)

	// Raising the target: a TL2 sync cannot lift TL0 straight to TL2 (the
	// next TL1 frames may reference TL1 frames never sent).
	pr.SetTarget(0, 2)
	ps := s.frame(t, false, 2, true, 1)
	mustForward(t, run(pr, ms(2000), s, ps), 0)
	ps = s.frame(t, false, 1, false, 1) // TL1 without sync: not yet
	mustForward(t, run(pr, ms(2033), s, ps), 0)
	ps = s.frame(t, false, 1, true, 1)
	outs = append(outs, mustForward(t, run(pr, ms(2066), s, ps), 1)...)
	if pr.Temporal() != 1 {
		t.Fatalf("Temporal = %d after a TL1 sync", pr.Temporal())
	}
	ps = s.frame(t, false, 2, false, 1) // TL2 without sync: not yet
	mustForward(t, run(pr, ms(2100), s, ps), 0)
	ps = s.frame(t, false, 2, true, 1)
	outs = append(outs, mustForward(t, run(pr, ms(2133), s, ps), 1)...)
	if pr.Temporal() != 2 {
		t.Fatalf("Temporal = %d after a TL2 sync", pr.Temporal())
	}
	in, n, o := l1t3(t, pr, s, ms(2133), 12, nil)
	if n != in {
		t.Fatalf("forwarded %d of %d at full rate", n, in)
	}
	outs = append(outs, o...)

	// Lowering takes effect at the next frame; a key frame restores the
	// whole target at once.
	pr.SetTarget(0, 1)
	_, _, o = l1t3(t, pr, s, ms(3000), 8, nil)
	outs = append(outs, o...)
	if pr.Temporal() != 1 {
		t.Fatalf("Temporal = %d after lowering to 1", pr.Temporal())
	}
	pr.SetTarget(0, 0)
	outs = append(outs, run(pr, ms(3500), s, s.frame(t, false, 1, false, 1))...)
	pr.SetTarget(0, 2)
	outs = append(outs, mustForward(t, run(pr, ms(3533), s, s.key(t)), 2)...)
	if pr.Temporal() != 2 {
		t.Fatalf("Temporal = %d after a key frame", pr.Temporal())
	}
	checkContiguous(t, outs)
}

func TestNoTIDIsTL0(t *testing.T) {
	pr := NewProjector()
	pr.SetTarget(0, 0)
	s := newSrc(0, 1, 1, 1, 1)
	s.noT = true
	mustForward(t, run(pr, ms(0), s, s.key(t)), 2)
	for i := range 5 {
		mustForward(t, run(pr, ms(float64(33*(i+1))), s, s.frame(t, false, 0, false, 2)), 2)
	}
}

func TestLossReorderDuplicates(t *testing.T) {
	pr := NewProjector()
	pr.SetTarget(0, 2)
	s := newSrc(0, 65530, 1, 1, 1)
	key := s.frame(t, true, 0, false, 3)
	f1 := s.frame(t, false, 2, false, 3)
	f2 := s.frame(t, false, 1, false, 2)
	base := key[0].hdr.SequenceNumber
	var got = map[uint16]uint16{} // input seq -> output seq
	for _, p := range []*parsed{key[0], key[2], f1[0], key[1], f1[2], f1[0], key[2], f2[0], f2[1]} {
		// key[1] arrives late; f1[1] is lost; f1[0] and key[2] twice.
		if o, ok := feed(pr, ms(0), 0, p); ok {
			if _, dup := got[p.hdr.SequenceNumber]; dup {
				t.Fatalf("seq %d forwarded twice", p.hdr.SequenceNumber)
			}
			got[p.hdr.SequenceNumber] = o.SequenceNumber
		}
	}
	for in, out := range got {
		if in != out { // the first segment keeps the numbers: out = in
			t.Errorf("input %d went out as %d", in, out)
		}
	}
	if len(got) != 7 {
		t.Errorf("forwarded %d packets, want 7", len(got))
	}
	if _, ok := got[base+4]; ok {
		t.Error("the lost packet appeared")
	}
	// It arrives after all: it fills its slot.
	if o, ok := feed(pr, ms(90), 0, f1[1]); !ok || o.SequenceNumber != base+4 {
		t.Errorf("late packet: %+v, %v; want seq %d", o, ok, base+4)
	}
}

// A packet from before the switch point that arrives after the key frame
// is dropped, not given a number of the new segment, with and without
// picture ids.
func TestLateFromBeforeSwitch(t *testing.T) {
	for _, bits := range []uint8{15, 0} {
		pr := NewProjector()
		pr.SetTarget(0, 2)
		low, high := newSrc(0, 10, 10, 10, 10), newSrc(1, 900, 900, 900, 90)
		low.bits, high.bits = bits, bits
		mustForward(t, run(pr, ms(0), low, low.key(t)), 2)
		pr.SetTarget(1, 2)
		before := high.delta(t)
		key := high.key(t)
		if o := run(pr, ms(33), high, key); len(o) != 2 {
			t.Fatalf("bits %d: switch forwarded %d", bits, len(o))
		}
		if o, ok := feed(pr, ms(40), 1, before[1]); ok {
			t.Fatalf("bits %d: packet from before the switch forwarded as %+v", bits, o)
		}
		after := mustForward(t, run(pr, ms(66), high, high.delta(t)), 2)
		if after[0].SequenceNumber != 14 {
			t.Fatalf("bits %d: sequence %d after the switch, want 14", bits, after[0].SequenceNumber)
		}
	}
}

// Without picture ids the temporal filter moves at frame starts only.
func TestNoPictureID(t *testing.T) {
	pr := NewProjector()
	pr.SetTarget(0, 0)
	s := newSrc(0, 300, 1, 0, 1)
	s.bits = 0
	outs := mustForward(t, run(pr, ms(0), s, s.key(t)), 2)
	_, _, o := l1t3(t, pr, s, ms(0), 16, nil)
	outs = append(outs, o...)
	for i := 1; i < len(outs); i++ {
		if outs[i].SequenceNumber != outs[i-1].SequenceNumber+1 {
			t.Fatalf("sequence %d after %d", outs[i].SequenceNumber, outs[i-1].SequenceNumber)
		}
	}
}

func TestSourcePauseResume(t *testing.T) {
	pr := NewProjector()
	pr.SetTarget(0, 2)
	s := newSrc(0, 1000, 1e6, 100, 10)
	mustForward(t, run(pr, ms(0), s, s.key(t)), 2)
	last := run(pr, ms(33), s, s.delta(t))[1]

	// Paused 2 s, then the same numbering with the timestamp moved on by
	// the pause: nothing to do.
	s.ts += 2 * clockRate
	o := mustForward(t, run(pr, ms(2066), s, s.delta(t)), 2)
	if o[0].SequenceNumber != last.SequenceNumber+1 || o[0].Timestamp != last.Timestamp+frameTicks+2*clockRate || o[0].SwitchedTo != -1 {
		t.Fatalf("after a pause: %+v, last %+v", o[0], last)
	}
	last = o[1]

	// Paused 5 s, then the timestamp jumps by far more: output follows
	// wall time instead, without waiting for a key frame.
	s.ts += 1 << 30
	o = mustForward(t, run(pr, ms(7066), s, s.delta(t)), 2)
	if want := last.Timestamp + uint32(ticks(5*time.Second)); o[0].Timestamp != want || o[0].SequenceNumber != last.SequenceNumber+1 {
		t.Fatalf("after a timestamp jump: %+v, want timestamp %d", o[0], want)
	}
	last = o[1]

	// Restarted with a new numbering and a key frame: a new segment.
	s.seq += 30000
	s.ts += 12345678
	s.pid += 5000
	s.tl0 += 77
	first := mustForward(t, run(pr, ms(8066), s, s.key(t)), 2)
	checkSwitch(t, last, first[0], time.Second, 0)
	last = first[1]

	// Restarted without a key frame: wait for one, asking for it.
	s.seq += 20000
	s.ts += 1e9
	for i := range farLimit {
		mustForward(t, run(pr, ms(float64(9000+33*i)), s, s.frame(t, false, 0, false, 1)), 0)
	}
	if e, ok := pr.WantsKeyframe(); !ok || e != 0 || pr.Current() != -1 {
		t.Fatalf("after a restart without key frame: WantsKeyframe %d, %v, Current %d", e, ok, pr.Current())
	}
	first = mustForward(t, run(pr, ms(9500), s, s.key(t)), 2)
	checkSwitch(t, last, first[0], 1434*time.Millisecond, 0)
}

// A very late packet (far behind, a little older) is dropped and does not
// count towards a restart.
func TestVeryLatePacketIgnored(t *testing.T) {
	pr := NewProjector()
	pr.SetTarget(0, 2)
	s := newSrc(0, 1000, 1e6, 100, 10)
	old := s.frame(t, false, 0, false, farLimit+1)
	s.seq, s.pid, s.ts = 1000+seqWindowSize+10, 100+frameWindowSize+5, 1e6+100*frameTicks
	mustForward(t, run(pr, ms(0), s, s.key(t)), 2)
	for _, p := range old {
		if _, ok := feed(pr, ms(10), 0, p); ok {
			t.Fatal("very late packet forwarded")
		}
	}
	if pr.Current() != 0 {
		t.Fatal("very late packets taken for a restart")
	}
	mustForward(t, run(pr, ms(33), s, s.delta(t)), 2)
}

// A packet with no descriptor parsed (vp8 nil) is TL0 without a picture id.
func TestNilDescriptor(t *testing.T) {
	pr := NewProjector()
	pr.SetTarget(0, 0)
	s := newSrc(0, 65535, 1, 1, 1)
	var outs []Output
	for i, key := range []bool{true, false, false} {
		p := s.frame(t, key, 2, false, 1)[0]
		o, ok := pr.Project(ms(float64(33*i)), 0, &p.hdr, nil, key)
		if !ok {
			t.Fatalf("packet %d dropped", i)
		}
		outs = append(outs, o)
	}
	if outs[0].SwitchedTo != 0 || outs[1].SequenceNumber != 0 || outs[2].Timestamp != outs[0].Timestamp+2*frameTicks {
		t.Fatalf("%+v", outs)
	}
}

// A packet lost and then repaired (it arrives late) whose frame is not
// forwarded — a temporal layer above the receiver's, or a frame dropped at
// its first packet — had its output number reserved when later packets
// passed it: it comes back as a fill (a padding-only packet under that
// number), so the receiver's sequence has no hole no NACK could repair.
// Late packets that are forwarded, and dropped in-order ones, are no fill.
func TestLateDroppedPacketFills(t *testing.T) {
	pr := NewProjector()
	pr.SetTarget(0, 1) // TL0 and TL1
	s := newSrc(0, 100, 1, 1, 1)
	outs := mustForward(t, run(pr, ms(0), s, s.key(t)), 2)
	tl2 := s.frame(t, false, 2, false, 1) // lost for now
	tl1 := s.frame(t, false, 1, true, 2)
	tl1[0], tl1[1] = tl1[1], tl1[0] // reordered: the first comes late
	dropped := s.frame(t, false, 2, false, 2)
	outs = append(outs, mustForward(t, run(pr, ms(33), s, tl1[:1]), 1)...)
	// The dropped frame's first packet is dropped in order (no number); its
	// second is lost for now.
	if o, ok := feed(pr, ms(66), 0, dropped[0]); ok || o.Fill {
		t.Fatalf("in-order TL2 packet: %+v %v, want dropped without a fill", o, ok)
	}
	next := s.delta(t)
	outs = append(outs, mustForward(t, run(pr, ms(100), s, next), 2)...)
	// The numbers the receiver saw skip two: the lost TL2 packet and the
	// lost second packet of the dropped frame; the late TL1 packet is one.
	if o, ok := feed(pr, ms(110), 0, tl1[1]); !ok || o.Fill {
		t.Fatalf("late TL1 packet: %+v %v, want forwarded", o, ok)
	} else {
		outs = append(outs, o)
	}
	for _, p := range []*parsed{tl2[0], dropped[1]} {
		o, ok := feed(pr, ms(120), 0, p)
		if ok || !o.Fill {
			t.Fatalf("late packet %d: %+v %v, want a fill", p.hdr.SequenceNumber, o, ok)
		}
		outs = append(outs, o)
	}
	seen := map[uint16]bool{}
	for _, o := range outs {
		if seen[o.SequenceNumber] {
			t.Fatalf("number %d twice", o.SequenceNumber)
		}
		seen[o.SequenceNumber] = true
	}
	first := outs[0].SequenceNumber
	for n := range uint16(len(outs)) {
		if !seen[first+n] {
			t.Fatalf("number %d never sent: a hole (%+v)", first+n, outs)
		}
	}
	if o, ok := feed(pr, ms(130), 0, tl2[0]); ok || o.Fill {
		t.Fatalf("the same late packet again: %+v %v, want nothing", o, ok)
	}
}
