package rewrite

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// randomScript is a script of n operations from r.
func randomScript(r *rand.Rand, n int) []byte {
	b := make([]byte, 3*n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// traceStats counts what a run exercised, so the property test cannot pass
// on traces that never switch, drop a layer or reorder around a switch.
type traceStats struct {
	switches, resyncs, stalls  int
	lateForwarded, lateDropped int
	temporalDrops, dups, pid7  int
	forwarded                  int
}

func (s *traceStats) add(tr *trace, res []result) {
	lastEnc, lastEpoch := -1, -1
	maxIdx := [MaxEncodings]int{-1, -1, -1}
	for i, r := range res {
		a := tr.arrivals[i]
		p := a.p
		late := p.idx < maxIdx[p.enc]
		maxIdx[p.enc] = max(maxIdx[p.enc], p.idx)
		if a.dup {
			s.dups++
		}
		if r.fwd {
			s.forwarded++
			if p.vp8.PictureIDBits == 7 {
				s.pid7++
			}
			if late {
				s.lateForwarded++
			}
			if r.out.SwitchedTo >= 0 {
				switch {
				case lastEnc < 0:
				case p.enc != lastEnc:
					s.switches++
				case p.epoch != lastEpoch:
					s.resyncs++
				default:
					s.stalls++
				}
			}
			lastEnc, lastEpoch = p.enc, p.epoch
		} else if p.enc == r.current {
			if late {
				s.lateDropped++
			} else if int(p.frame.tid) > r.temporal {
				s.temporalDrops++
			}
		}
	}
}

func TestProjectorTraces(t *testing.T) {
	n := 400
	if testing.Short() {
		n = 60
	}
	var st traceStats
	for seed := range uint64(n) {
		r := rand.New(rand.NewPCG(seed, 2))
		script := randomScript(r, 20+r.IntN(160))
		frames := 300 + r.IntN(300)
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			tr := genTrace(seed, frames, script)
			res := runTrace(tr)
			checkTrace(t, tr, res)
			st.add(tr, res)
		})
	}
	t.Logf("%+v", st)
	if st.switches == 0 || st.resyncs == 0 || st.stalls == 0 || st.lateForwarded == 0 || st.lateDropped == 0 ||
		st.temporalDrops == 0 || st.dups == 0 || st.pid7 == 0 {
		t.Errorf("traces did not exercise every path: %+v", st)
	}
}
