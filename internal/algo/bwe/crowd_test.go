package bwe

import (
	"testing"
	"time"
)

func TestCrowdedAndClear(t *testing.T) {
	ms := time.Millisecond
	cases := []struct {
		name           string
		loss           float64
		queue          time.Duration
		crowded, clear bool
	}{
		{"ten flows: 10 % behind a full 100 ms queue", 0.10, 100 * ms, true, false},
		{"one flow's overflow: 4.6 % behind 70 ms", 0.046, 70 * ms, false, false},
		{"random loss with no queue", 0.08, 0, false, false},
		{"a queue with no loss", 0, 100 * ms, false, false},
		{"the flows stopped", 0, 5 * ms, false, true},
		{"at the thresholds", CrowdedLoss, CrowdedQueue, true, false},
		{"just under clear", ClearLoss - 0.001, ClearQueue - ms, false, true},
	}
	for _, c := range cases {
		if got := Crowded(c.loss, c.queue); got != c.crowded {
			t.Errorf("%s: crowded %v, want %v", c.name, got, c.crowded)
		}
		if got := Clear(c.loss, c.queue); got != c.clear {
			t.Errorf("%s: clear %v, want %v", c.name, got, c.clear)
		}
	}
}
