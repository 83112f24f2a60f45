package sim

import (
	"testing"
	"time"
)

// The targets must not depend on the one link the scenarios were written
// for: the same checks with a long queue, long and short round trips and
// slower feedback, three seeds each.
func TestRobustness(t *testing.T) {
	ms := time.Millisecond
	variants := []struct {
		name                string
		queue, delay, fbInt time.Duration
	}{
		{"300 ms queue", 300 * ms, 25 * ms, 0},
		{"200 ms RTT", 100 * ms, 100 * ms, 0},
		{"10 ms RTT", 100 * ms, 5 * ms, 0},
		{"100 ms feedback", 100 * ms, 25 * ms, 100 * ms},
	}
	for _, v := range variants {
		for seed := int64(1); seed <= 3; seed++ {
			vary := func(sc Scenario) Scenario {
				sc.Seed, sc.Queue, sc.Delay, sc.FeedbackInterval = seed, v.queue, v.delay, v.fbInt
				return sc
			}
			r := Run(vary(CapDrop()))
			down, okD := r.Downgrade(0, 20*s)
			top, okT := r.Reaches(0, 40*s, TopLevel)
			if !okD || down > 3*s || !okT || top > 10*s {
				t.Errorf("%s seed %d cap-drop: lower layer after %s, top after %s", v.name, seed, dur(down, okD), dur(top, okT))
			}

			r = Run(vary(Cap128()))
			susp := r.Fraction(15*s, r.Scenario.Duration, func(x Sample) bool { return x.Picks[0].Suspended })
			if fps := r.MinFPS(0, 15*s, r.Scenario.Duration); susp > 0 || fps < 7 {
				t.Errorf("%s seed %d cap-128k: suspended %.0f %%, %.1f fps", v.name, seed, 100*susp, fps)
			}

			r = Run(vary(SteadyCap()))
			if sw := r.SwitchesBetween(60*s, 120*s); sw != 0 {
				t.Errorf("%s seed %d steady-threshold: %d switches in the last minute", v.name, seed, sw)
			}

			r = Run(vary(RandomLoss()))
			if top := r.Fraction(30*s, 60*s, func(x Sample) bool { return level(x.Picks[0]) == TopLevel }); top < 1 {
				t.Errorf("%s seed %d loss-5pct: top layer %.0f %% of the last 30 s", v.name, seed, 100*top)
			}
		}
	}
}
