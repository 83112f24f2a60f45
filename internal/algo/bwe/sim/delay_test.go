package sim

import (
	"testing"
	"time"

	"github.com/podium-sfu/podium/internal/algo/alloc"
)

// Issue 22, delay and jitter: 100 ms and 300 ms one-way delay (the feedback
// returns with the same delay), then ±30 ms of jitter (a further 0–60 ms) on
// a 3 Mb/s link with a 100 ms queue, the stage a 720p camera (1.5 Mb/s top
// layer). After 30 s of ramp-up the estimate must not collapse (it stays
// where it keeps the top layer), the stage is on the top layer at least 90 %
// of the next 60 s with no switch, and competing mode is never entered.
func TestDelayAndJitterHoldTheTopLayer(t *testing.T) {
	cases := []struct {
		delay, jitter time.Duration
	}{{100 * time.Millisecond, 0}, {300 * time.Millisecond, 0}, {100 * time.Millisecond, 60 * time.Millisecond}, {300 * time.Millisecond, 60 * time.Millisecond}}
	// The least estimate that keeps the top layer (beside 40 kb/s of audio)
	// without the allocator's shortfall grace: below it the estimate has
	// collapsed. One overuse may cut it under the layer's rate; the layer
	// must stay.
	keepsTop := 40_000 + int(float64(RatesCamera[2])/(1+alloc.DefaultConfig().DownMargin))
	for _, c := range cases {
		for seed := int64(1); seed <= 4; seed++ {
			r := Run(Scenario{
				Name: "delay-jitter", Duration: 90 * s, Seed: seed,
				Capacity: []Step{{0, 3_000_000}}, Queue: 100 * time.Millisecond,
				Delay: c.delay, Jitter: c.jitter, Sources: StageCamera(),
			})
			onTop := r.Fraction(30*s, 90*s, func(x Sample) bool { return Level(x.Picks[0]) == TopLevel })
			minEst := r.Samples[300].Estimate
			for _, x := range r.Samples[300:] {
				minEst = min(minEst, x.Estimate)
			}
			sw := r.SwitchesBetween(30*s, 90*s)
			top, _ := r.Reaches(0, 0, TopLevel)
			if seed == 1 {
				t.Logf("delay %v, jitter 0–%v: top layer after %v, %.0f %% of 30–90 s on it, %d switches, least estimate %d kb/s, competing mode %d×",
					c.delay, c.jitter, top, 100*onTop, sw, minEst/1000, r.Final.CompeteEntries)
			}
			if onTop < 0.9 || sw != 0 {
				t.Errorf("delay %v jitter %v seed %d: on the top layer %.0f %% of 30–90 s with %d switches, want ≥ 90 %% and 0",
					c.delay, c.jitter, seed, 100*onTop, sw)
			}
			if minEst < keepsTop {
				t.Errorf("delay %v jitter %v seed %d: estimate fell to %d kb/s, below the %d kb/s that keep the top layer", c.delay, c.jitter, seed, minEst/1000, keepsTop/1000)
			}
			if r.Final.CompeteEntries != 0 {
				t.Errorf("delay %v jitter %v seed %d: competing mode entered %d× with no competing flow", c.delay, c.jitter, seed, r.Final.CompeteEntries)
			}
		}
	}
}
