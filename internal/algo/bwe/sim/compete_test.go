package sim

import (
	"slices"
	"testing"
	"time"

	"github.com/podium-sfu/podium/internal/algo/bwe"
)

// delayOnly is sc with the estimator kept in delay mode (the behaviour before
// competitive mode), for comparison.
func delayOnly(sc Scenario) Scenario {
	c := bwe.DefaultConfig()
	c.DelayOnly = true
	sc.BWE = &c
	return sc
}

// p95Queue is the 95th percentile of the bottleneck's queueing delay over
// [from, to).
func p95Queue(r Result, from, to time.Duration) time.Duration {
	var qs []time.Duration
	for _, x := range r.Samples {
		if x.T >= from && x.T < to {
			qs = append(qs, x.Queue)
		}
	}
	if len(qs) == 0 {
		return 0
	}
	slices.Sort(qs)
	return qs[len(qs)*95/100]
}

func meanMedia(r Result, from, to time.Duration) float64 {
	return r.Mean(from, to, func(x Sample) float64 { return float64(x.Media) })
}

func meanTCP(r Result, from, to time.Duration) float64 {
	return r.Mean(from, to, func(x Sample) float64 { return float64(x.TCP) })
}

// (a) One CUBIC download shares the 4 Mb/s link from 20 s to 80 s: averaged
// over the 50 s from 30 s and over the seeds, our media holds at least 1.3 Mb/s,
// a third of the link (the target), and in at least 6 of the 8 seeds
// each on its own; never more
// than half (no unfairness the other way). In delay mode alone it falls to the
// 500 kb/s layer (the paper's finding): the same average must be below a
// third there. When the download stops, the top layer is back within 5 s.
func TestCompetingCubicHoldsAThird(t *testing.T) {
	const third = 1_300_000.0
	var sum, oldSum float64
	held := 0
	for seed := int64(1); seed <= seeds; seed++ {
		r := Run(withSeed(TCPOne(), seed))
		media, tcp := meanMedia(r, 30*s, 80*s), meanTCP(r, 30*s, 80*s)
		top, okT := r.Reaches(0, 80*s, TopLevel)
		onTop := r.Fraction(30*s, 80*s, func(x Sample) bool { return Level(x.Picks[0]) == TopLevel })
		old := Run(delayOnly(withSeed(TCPOne(), seed)))
		oldMedia := meanMedia(old, 30*s, 80*s)
		t.Logf("seed %d: media %.0f kb/s (delay mode alone: %.0f), TCP %.0f kb/s, top layer %.0f %% of the time, competing mode entered %d×, top again %s after the download",
			seed, media/1000, oldMedia/1000, tcp/1000, 100*onTop, r.Final.CompeteEntries, dur(top, okT))
		sum += media
		oldSum += oldMedia
		if media >= third {
			held++
		}
		if media > 2_000_000 {
			t.Errorf("seed %d: media %.0f kb/s beside one CUBIC flow, want at most half of 4 Mb/s", seed, media/1000)
		}
		if !okT || top > 5*s {
			t.Errorf("seed %d: top layer %s after the download stopped, want within 5 s", seed, dur(top, okT))
		}
	}
	mean, oldMean := sum/seeds, oldSum/seeds
	t.Logf("mean over %d seeds: %.0f kb/s (delay mode alone %.0f kb/s); 1.3 Mb/s or more in %d seeds", seeds, mean/1000, oldMean/1000, held)
	if mean < third || held < 6 {
		t.Errorf("media %.0f kb/s on average, 1.3 Mb/s or more in %d of %d seeds: want 1.3 Mb/s on average and in at least 6", mean/1000, held, seeds)
	}
	if oldMean >= third {
		t.Errorf("in delay mode alone media held %.0f kb/s on average: the scenario does not show the problem", oldMean/1000)
	}
}

// Ten CUBIC downloads: the stage keeps at least its lowest layer, never
// suspended. Our media stays under competeMinSend, so competitive mode does
// not start and everything is the delay mode's: the recovery when the
// downloads stop (measured 3.3–13.2 s; probes at the smallest step after the
// failures under the downloads, and loss windows that close slowly at these
// rates, hold it back) must be the same as in delay mode alone.
func TestCompetingTenCubicKeepsTheLowestLayer(t *testing.T) {
	for seed := int64(1); seed <= seeds; seed++ {
		r := Run(withSeed(TCPTen(), seed))
		old := Run(delayOnly(withSeed(TCPTen(), seed)))
		suspended := r.Fraction(25*s, 60*s, func(x Sample) bool { return x.Picks[0].Suspended })
		media, tcp := meanMedia(r, 25*s, 60*s), meanTCP(r, 25*s, 60*s)
		top, okT := r.Reaches(0, 60*s, TopLevel)
		oldTop, oldOK := old.Reaches(0, 60*s, TopLevel)
		t.Logf("seed %d: media %.0f kb/s, TCP %.0f kb/s, suspended %.0f %%, top again %s after the downloads (delay mode alone %s)",
			seed, media/1000, tcp/1000, 100*suspended, dur(top, okT), dur(oldTop, oldOK))
		if suspended > 0 {
			t.Errorf("seed %d: suspended %.0f %% of the time beside ten flows", seed, 100*suspended)
		}
		if !okT || oldOK && top > oldTop+time.Second {
			t.Errorf("seed %d: top layer %s after the downloads stopped, delay mode alone %s", seed, dur(top, okT), dur(oldTop, oldOK))
		}
	}
}

// The browser test's sequence (TCPShare): each time the downloads stop (one
// and ten together, ten staggered, ten on and off twice), the estimate is
// back above 1.6 Mb/s (the 1.5 Mb/s top layer and the thumbnail) within 3 s
// and the stage on its top layer within 4 s (issue 22: within 5 s). The
// probes that failed beside the downloads backed off to 3 s at the smallest
// step, and kept doing so after them until one reached new ground: 6.4 s to
// the estimate and 7.4 s to the top layer in seed 7 before the drained queue
// reset them (compete.go, cleared). Seed 17 missed that reset after the
// staggered ten (10 s, 32 s), our lowest layers' rate wavering as the queue
// drained; a queue that stood in competitive mode now clears regardless.
func TestCompetingTenCubicOnOffRecovers(t *testing.T) {
	var list []int64
	for seed := int64(1); seed <= seeds; seed++ {
		list = append(list, seed)
	}
	for _, seed := range append(list, 17) {
		r := Run(withSeed(TCPShare(), seed))
		for _, off := range TCPShareOffs {
			est, okE := r.EstimateAbove(off, 1_600_000)
			top, okT := r.Reaches(0, off, TopLevel)
			t.Logf("seed %d: flows off at %v: estimate ≥ 1.6 Mb/s after %s, top layer after %s", seed, off, dur(est, okE), dur(top, okT))
			if !okE || est > 3*s {
				t.Errorf("seed %d: estimate ≥ 1.6 Mb/s %s after the flows stopped at %v, want within 3 s", seed, dur(est, okE), off)
			}
			if !okT || top > 4*s {
				t.Errorf("seed %d: top layer %s after the flows stopped at %v, want within 4 s", seed, dur(top, okT), off)
			}
		}
	}
}

// (b) The delay rises because of our own overshoot: the capacity falls from
// 3 Mb/s to 500 kb/s, a queue only we fill. The estimator must still back off
// in delay mode (estimate below the new capacity within 3 s, queue drained),
// never taking the queue for a competitor's.
func TestOwnOvershootStillBacksOff(t *testing.T) {
	for seed := int64(1); seed <= seeds; seed++ {
		r := Run(withSeed(CapDrop(), seed))
		est, okE := r.EstimateBelow(20*s, 500_000)
		q := p95Queue(r, 25*s, 40*s)
		t.Logf("seed %d: cap drop: estimate < 500 kb/s in %s, p95 queue %v under the cap, competing mode entered %d×",
			seed, dur(est, okE), q, r.Final.CompeteEntries)
		if !okE || est > 3*s {
			t.Errorf("seed %d: estimate below 500 kb/s after %s, want within 3 s", seed, dur(est, okE))
		}
		if r.Final.CompeteEntries != 0 {
			t.Errorf("seed %d: competing mode entered %d× on a queue only we fill", seed, r.Final.CompeteEntries)
		}
		if q > 50*time.Millisecond {
			t.Errorf("seed %d: p95 queue %v under the 500 kb/s cap, want under 50 ms", seed, q)
		}
	}
}

// (c) No competing traffic: the queueing delay we cause stays low (95th
// percentile under 50 ms) and competing mode is never entered, in every
// standard scenario whose queue was low in delay mode alone, and on the
// competition scenarios' link alone. In the two where our own lowest layers
// already kept the queue standing in delay mode (128 kb/s; the gallery's
// 600 kb/s dip: p95 70–100 ms), competing mode may be entered, but the queue
// must be no longer than in delay mode alone.
func TestAloneQueueStaysLow(t *testing.T) {
	for _, sc := range append(Standard(), Alone4M()) {
		for seed := int64(1); seed <= 4; seed++ {
			r := Run(withSeed(sc, seed))
			old := Run(delayOnly(withSeed(sc, seed)))
			q, oldQ := p95Queue(r, 0, r.Scenario.Duration), p95Queue(old, 0, r.Scenario.Duration)
			if seed == 1 {
				t.Logf("%s: p95 queue %v (delay mode alone %v), competing mode entered %d×", sc.Name, q, oldQ, r.Final.CompeteEntries)
			}
			if oldQ >= 50*time.Millisecond {
				if q > oldQ+5*time.Millisecond {
					t.Errorf("%s seed %d: p95 queue %v, delay mode alone %v", sc.Name, seed, q, oldQ)
				}
				continue
			}
			if r.Final.CompeteEntries != 0 {
				t.Errorf("%s seed %d: competing mode entered %d× with no competing flow", sc.Name, seed, r.Final.CompeteEntries)
			}
			if q >= 50*time.Millisecond {
				t.Errorf("%s seed %d: p95 queue %v, want under 50 ms", sc.Name, seed, q)
			}
		}
	}
}
