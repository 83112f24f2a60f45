package rewrite

import (
	"math/rand/v2"
	"testing"
)

// replay feeds a trace to one projector packet by packet, cycling, and
// starting over with a fresh projector at the end of the trace, without
// allocating: Project and Apply on a scratch copy of each packet.
type replay struct {
	tr      *trace
	pr      *Projector
	fresh   Projector
	i, ei   int
	scratch [1500]byte
	apply   bool
	fwd     int
}

func newReplay(seed uint64, frames, ops int, apply bool) *replay {
	r := rand.New(rand.NewPCG(seed, 3))
	tr := genTrace(seed, frames, randomScript(r, ops))
	return &replay{tr: tr, pr: NewProjector(), fresh: *NewProjector(), apply: apply}
}

func (rp *replay) step(tb testing.TB) {
	if rp.i == len(rp.tr.arrivals) {
		*rp.pr = rp.fresh
		rp.i, rp.ei = 0, 0
	}
	a := &rp.tr.arrivals[rp.i]
	rp.i++
	for ; rp.ei < len(rp.tr.events) && !rp.tr.events[rp.ei].at.After(a.at); rp.ei++ {
		ev := &rp.tr.events[rp.ei]
		if ev.stop {
			rp.pr.EncodingStopped(ev.enc)
		} else {
			rp.pr.SetTarget(ev.enc, ev.temporal)
		}
	}
	p := a.p
	out, ok := rp.pr.Project(a.at, p.enc, &p.hdr, &p.vp8, p.vp8.IsKeyframe())
	if !ok {
		return
	}
	rp.fwd++
	if !rp.apply {
		return
	}
	b := rp.scratch[:len(p.buf)]
	copy(b, p.buf)
	if err := Apply(b, &p.hdr, out); err != nil {
		tb.Fatal(err)
	}
}

func TestProjectApplyDoNotAllocate(t *testing.T) {
	rp := newReplay(11, 600, 120, true)
	if n := testing.AllocsPerRun(len(rp.tr.arrivals)*2, func() { rp.step(t) }); n != 0 {
		t.Fatalf("%v allocations per packet", n)
	}
	if rp.fwd == 0 {
		t.Fatal("nothing forwarded")
	}
}

func benchReplay(b *testing.B, rp *replay) {
	b.ReportAllocs()
	for b.Loop() {
		rp.step(b)
	}
	b.ReportMetric(float64(rp.fwd)/float64(b.N), "fwd/op")
}

// BenchmarkProject measures Project for one arriving packet (of any of the
// three encodings) over a trace with switches, temporal changes, pauses,
// loss and reordering; ProjectApply adds Apply on the forwarded ones;
// Steady is the common case, one encoding forwarded at the full temporal
// rate and no network trouble. The harness (walking a trace of some
// 10,000 packets) is included.
func BenchmarkProject(b *testing.B)       { benchReplay(b, newReplay(11, 900, 150, false)) }
func BenchmarkProjectApply(b *testing.B)  { benchReplay(b, newReplay(11, 900, 150, true)) }
func BenchmarkProjectSteady(b *testing.B) { benchReplay(b, newReplay(12, 900, 0, true)) }
