package sim

import (
	"testing"
	"time"
)

// A short cap lifted, as in the browser test (TestShapedReceiverSeesVideo: 300
// kb/s for 4 s behind a 200 ms queue): the cut at the cap's onset comes from
// far above what the cap delivers, and must not leave that old rate as known
// ground (bwe's knownGround). Lifted, the path is free: the estimate above the
// top layer's rate within 5 s. Before knownGround, a 400 kb/s cap left the
// estimate climbing by probes that each backed off like a failure: 16-19 s.
func TestShortCapLifted(t *testing.T) {
	for _, capBps := range []int{300_000, 400_000} {
		for _, capFor := range []time.Duration{3 * s, 4 * s, 6 * s} {
			for seed := int64(1); seed <= seeds; seed++ {
				r := Run(Scenario{
					Name: "short-cap", Duration: 45 * s, Seed: seed, Queue: 200 * time.Millisecond,
					Capacity: []Step{{0, 3_000_000}, {20 * s, capBps}, {20*s + capFor, 3_000_000}},
					Sources:  Stage(),
				})
				up, ok := r.EstimateAbove(20*s+capFor, Rates720[2])
				if !ok || up > 5*s {
					t.Errorf("%d kb/s for %v, seed %d: estimate above 2.5 Mb/s %s after the lift, want within 5 s",
						capBps/1000, capFor, seed, dur(up, ok))
				}
			}
		}
	}
}
