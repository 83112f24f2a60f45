package layers

import (
	"testing"
	"time"
)

func TestPreemptiveDelay(t *testing.T) {
	ms := time.Millisecond
	cases := []struct {
		sender    time.Duration
		receivers []time.Duration
		want      time.Duration
	}{
		{50 * ms, []time.Duration{20 * ms, 120 * ms, 80 * ms}, 80 * ms},
		{200 * ms, []time.Duration{20 * ms, 120 * ms}, 0},
		{0, nil, 10 * ms},
		{100 * ms, []time.Duration{95 * ms}, 5 * ms},
		{100 * ms, []time.Duration{90 * ms}, 0},
	}
	for _, c := range cases {
		if got := PreemptiveDelay(c.sender, c.receivers); got != c.want {
			t.Errorf("PreemptiveDelay(%v, %v) = %v, want %v", c.sender, c.receivers, got, c.want)
		}
	}
}
