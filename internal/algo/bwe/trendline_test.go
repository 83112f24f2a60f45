package bwe

import (
	"math"
	"testing"
	"time"
)

const ms1 = time.Millisecond

// feedTrend gives n group deltas 5 ms apart whose arrival spacing exceeds the
// send spacing by grow, and returns the hypotheses.
func feedTrend(tr *trendline, n int, grow time.Duration) []Usage {
	var out []Usage
	for i := 0; i < n; i++ {
		d := delta{send: 5 * ms1, arrival: 5*ms1 + grow, at: time.Duration(i+1) * (5*ms1 + grow)}
		out = append(out, tr.add(d))
	}
	return out
}

func TestTrendlineHypothesis(t *testing.T) {
	cases := []struct {
		name string
		grow time.Duration // per 5 ms group: positive = queue building
		want Usage
	}{
		{"steady delay", 0, Normal},
		{"queue building 1 ms per group", ms1, Overuse},
		{"queue building 0.5 ms per group", 500 * time.Microsecond, Overuse},
		{"queue draining", -ms1, Underuse},
		{"tiny growth within threshold", 10 * time.Microsecond, Normal},
	}
	for _, c := range cases {
		tr := newTrendline()
		us := feedTrend(&tr, 60, c.grow)
		if got := us[len(us)-1]; got != c.want {
			t.Errorf("%s: %v after 60 groups, want %v", c.name, got, c.want)
		}
		for i := 0; i < trendWindow-1; i++ {
			if us[i] != Normal {
				t.Errorf("%s: hypothesis %v before the window filled", c.name, us[i])
				break
			}
		}
	}
}

// Overuse needs the trend over the threshold for more than 10 ms and twice: a
// single spike is not overuse.
func TestTrendlineSpikeIsNotOveruse(t *testing.T) {
	tr := newTrendline()
	feedTrend(&tr, 30, 0)
	at := tr.xs[(tr.next+trendWindow-1)%trendWindow]
	u := tr.add(delta{send: 5 * ms1, arrival: 40 * ms1, at: time.Duration(at+40) * ms1})
	if u == Overuse {
		t.Fatal("one delayed group counted as overuse")
	}
}

func TestThresholdAdaptation(t *testing.T) {
	cases := []struct {
		name     string
		start    float64
		modified float64
		dt       float64 // ms since the last adaptation
		want     float64
	}{
		{"below: falls fast toward it", 12.5, 0, 10, 12.5 + thresholdKDown*(0-12.5)*10},
		{"above: rises slowly", 12.5, 20, 10, 12.5 + thresholdKUp*(20-12.5)*10},
		{"far above: a spike does not move it", 12.5, 12.5 + 16, 10, 12.5},
		{"never below the minimum", 6.5, 0, 100, thresholdMin},
		{"time step capped at 100 ms", 12.5, 20, 1000, 12.5 + thresholdKUp*(20-12.5)*100},
		{"negative trend uses its magnitude", 12.5, -20, 10, 12.5 + thresholdKUp*(20-12.5)*10},
	}
	for _, c := range cases {
		tr := newTrendline()
		tr.threshold = c.start
		tr.lastAdapt = 1000
		tr.adapt(c.modified, 1000+c.dt)
		if math.Abs(tr.threshold-c.want) > 1e-9 {
			t.Errorf("%s: threshold %v, want %v", c.name, tr.threshold, c.want)
		}
	}
}

// The threshold follows a path's jitter: random delay noise of a few ms must
// not read as overuse once the threshold has adapted.
func TestTrendlineJitterNotOveruse(t *testing.T) {
	tr := newTrendline()
	seed := uint64(1)
	overuse := 0
	prevDelay := time.Duration(0)
	at := time.Duration(0)
	for i := 0; i < 2000; i++ {
		seed = seed*6364136223846793005 + 1442695040888963407
		delay := time.Duration(seed>>33%4000) * time.Microsecond // 0–4 ms of queueing noise
		arr := 5*ms1 + delay - prevDelay
		prevDelay = delay
		at += arr
		if tr.add(delta{send: 5 * ms1, arrival: arr, at: at}) == Overuse {
			overuse++
		}
	}
	if overuse > 20 {
		t.Errorf("%d of 2000 jittery groups read as overuse", overuse)
	}
}
