package bwe

import (
	"math"
	"testing"
	"time"
)

func TestRateControl(t *testing.T) {
	cfg := DefaultConfig()
	type step struct {
		at      time.Duration
		u       Usage
		acked   float64 // app = acked unless appRate is set
		appRate float64
		limited bool
	}
	cases := []struct {
		name  string
		start float64
		steps []step
		want  float64
	}{
		{"overuse, path limited: β × acknowledged − 5 kb/s", 2e6,
			[]step{{0, Overuse, 1e6, 0, true}}, 0.85*1e6 - 5000},
		{"overuse, application limited: one β step from the estimate", 2e6,
			[]step{{0, Overuse, 1e6, 0, false}}, 0.85 * 2e6},
		{"overuse never raises the estimate", 500e3,
			[]step{{0, Overuse, 1e6, 0, true}}, 500e3},
		{"second decrease within an RTT is refused", 2e6,
			[]step{{0, Overuse, 1e6, 0, true}, {50 * ms1, Overuse, 0.9e6, 0, true}}, 0.85*1e6 - 5000},
		{"second decrease after an RTT", 2e6,
			[]step{{0, Overuse, 1e6, 0, true}, {250 * ms1, Overuse, 0.9e6, 0, true}}, 0.85*0.9e6 - 5000},
		{"application limited: next step only after 500 ms", 2e6,
			[]step{{0, Overuse, 1e6, 0, false}, {300 * ms1, Overuse, 1e6, 0, false}}, 0.85 * 2e6},
		{"multiplicative increase: 8 % per second far from convergence", 1e6,
			[]step{{0, Normal, 1e6, 0, false}, {time.Second, Normal, 1e6, 0, false}}, (1e6 + 1000) * 1.08},
		{"increase capped at 1.2 × media acknowledged + 10 kb/s", 1e6,
			[]step{{0, Normal, 2e6, 500e3, false}, {time.Second, Normal, 2e6, 500e3, false}}, 1e6},
		{"cap does not lower an estimate above it", 3e6,
			[]step{{0, Normal, 1e6, 0, false}}, 3e6},
		{"underuse holds", 1e6,
			[]step{{0, Underuse, 1e6, 0, false}, {time.Second, Underuse, 1e6, 0, false}}, 1e6},
		{"without any acknowledgement, overuse halves", 1e6,
			[]step{{0, Overuse, 0, 0, false}}, 0.5e6},
	}
	for _, c := range cases {
		r := newRateControl(cfg)
		r.estimate = c.start
		for _, s := range c.steps {
			app := s.appRate
			if app == 0 {
				app = s.acked
			}
			r.update(s.at, s.u, s.acked, app, 100*ms1, s.limited)
		}
		// The first Normal step in Increase state only stamps the time.
		if math.Abs(r.estimate-c.want) > 1 {
			t.Errorf("%s: estimate %.0f, want %.0f", c.name, r.estimate, c.want)
		}
	}
}

// After an overuse the path's capacity is known and the increase near it is
// additive: about one packet per RTT + 100 ms, far less than 8 %.
func TestRateControlAdditiveNearCapacity(t *testing.T) {
	r := newRateControl(DefaultConfig())
	r.estimate = 4e6
	r.update(0, Overuse, 3e6, 3e6, 100*ms1, true) // → 2.545 Mb/s, capacity 3 Mb/s known
	before := r.estimate
	r.update(time.Second, Normal, 3e6, 3e6, 100*ms1, false) // hold → increase, stamps time
	r.update(2*time.Second, Normal, 3e6, 3e6, 100*ms1, false)
	inc := r.estimate - before
	if inc <= 0 || inc > 0.03*before {
		t.Fatalf("increase near capacity %.0f b/s over 1 s, want additive (small, positive)", inc)
	}
}

func TestRateControlBounds(t *testing.T) {
	cfg := DefaultConfig()
	r := newRateControl(cfg)
	r.set(math.NaN(), 0)
	if r.estimate != float64(cfg.MinBitrate) {
		t.Errorf("NaN set gives %v", r.estimate)
	}
	r.set(1e12, 0)
	if r.estimate != float64(cfg.MaxBitrate) {
		t.Errorf("huge set gives %v", r.estimate)
	}
}
