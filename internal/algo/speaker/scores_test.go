package speaker

import (
	"math"
	"testing"
)

func TestScore(t *testing.T) {
	// Expected values computed independently from
	// ln C(n,v) + v ln p + (n−v) ln(1−p) − ln λ + λv, floored at 1e-10.
	cases := []struct {
		v, n      int
		lambda    float64
		want      float64
		rationale string
	}{
		{0, 13, 0.78, 1e-10, "silence is floored"},
		{3, 13, 0.78, 1e-10, "3 sub-bands still negative, floored"},
		{4, 13, 0.78, 0.9298305547132184, "first positive immediate score"},
		{8, 13, 0.78, 4.637617219615338, ""},
		{9, 13, 0.78, 4.829830554713219, "the immediate score peaks at 9"},
		{12, 13, 0.78, 3.1624973694807466, "and falls for the loudest levels"},
		{0, 5, 24, 1e-10, "no active immediate in the block"},
		{1, 5, 24, 18.96564817928643, ""},
		{5, 5, 24, 113.35621026685233, ""},
		{0, 10, 47, 1e-10, "no active medium block"},
		{1, 10, 47, 38.52096568568453, ""},
		{10, 10, 47, 459.2183805926905, ""},
	}
	for _, c := range cases {
		got := score(c.v, c.n, 0.5, c.lambda)
		if math.Abs(got-c.want) > 1e-9*max(1, c.want) {
			t.Errorf("score(%d, %d, 0.5, %v) = %v, want %v %s", c.v, c.n, c.lambda, got, c.want, c.rationale)
		}
	}
}

func TestLogBinomial(t *testing.T) {
	for _, c := range []struct{ n, k, want int }{{13, 0, 1}, {13, 1, 13}, {13, 8, 1287}, {13, 13, 1}, {5, 2, 10}, {10, 5, 252}} {
		if got := math.Exp(logBinomial(c.n, c.k)); math.Abs(got-float64(c.want)) > 1e-6 {
			t.Errorf("C(%d,%d) = %v, want %d", c.n, c.k, got, c.want)
		}
	}
}

func TestLevel(t *testing.T) {
	for _, c := range []struct{ raw, want uint8 }{
		{0, 127},         // 0 dBov, the loudest
		{127, 0},         // −127 dBov, silence
		{20, 107},        // −20 dBov
		{0x80 | 20, 107}, // the voice-activity bit is ignored
		{47, 80},
	} {
		if got := Level(c.raw); got != c.want {
			t.Errorf("Level(%#x) = %d, want %d", c.raw, got, c.want)
		}
	}
}

func TestImmediate(t *testing.T) {
	sub := DefaultConfig().subunit()
	if sub != 10 {
		t.Fatalf("sub-unit = %d, want (127+12)/13 = 10", sub)
	}
	for _, c := range []struct {
		level, floor uint8
		want         int
		rationale    string
	}{
		{0, 0, 0, "silence"},
		{9, 0, 0, "below one sub-unit above an unknown floor"},
		{10, 0, 1, ""},
		{127, 0, 12, "the loudest level has 12 active sub-bands"},
		{59, 50, 0, "less than a sub-unit above the noise floor is silence"},
		{60, 50, 6, "above it, the absolute level counts, not the distance to the floor"},
		{80, 0, 8, "−47 dBov: the quietest level active at the medium scale (> 7)"},
		{79, 0, 7, "−48 dBov: never active at the medium scale, whatever the floor"},
	} {
		if got := immediate(c.level, c.floor, sub); got != c.want {
			t.Errorf("immediate(%d, floor %d) = %d, want %d %s", c.level, c.floor, got, c.want, c.rationale)
		}
	}
}

func TestActivity(t *testing.T) {
	sc := newScales(DefaultConfig())
	push := func(h *history, level uint8, n int) {
		for range n {
			h.push(level)
		}
	}
	cases := []struct {
		name  string
		fill  func(h *history)
		floor uint8
		want  activity
	}{
		{"silence", func(h *history) {}, 0, activity{}},
		{"a full second of speech", func(h *history) { push(h, 100, 50) }, 0, activity{10, 5, 10}},
		{"4 newest levels: no full block", func(h *history) { push(h, 100, 4) }, 0, activity{10, 4, 0}},
		{"5 newest levels: one block", func(h *history) { push(h, 100, 5) }, 0, activity{10, 5, 1}},
		{"blocks are aligned on the newest level", func(h *history) { push(h, 100, 5); push(h, 0, 1) }, 0, activity{0, 4, 0}},
		{"levels at medium threshold are inactive", func(h *history) { push(h, 79, 50) }, 0, activity{7, 0, 0}},
		{"levels near the floor are silence", func(h *history) { push(h, 100, 50) }, 95, activity{}},
		{"the oldest level still counts", func(h *history) { push(h, 100, 5); push(h, 0, 45) }, 0, activity{0, 0, 1}},
		{"older levels fall out", func(h *history) { push(h, 100, 5); push(h, 0, 46) }, 0, activity{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHistory(50)
			c.fill(&h)
			if got := sc.activity(&h, c.floor); got != c.want {
				t.Errorf("activity = %+v, want %+v", got, c.want)
			}
		})
	}
}

// The decision thresholds reduce to simple conditions on the activity counts;
// these pin them down so that a change to the tables is noticed.
func TestDecisionThresholds(t *testing.T) {
	cfg := DefaultConfig()
	sc := newScales(cfg)
	beats := func(cand, dom activity) bool {
		c, d := sc.logScores(cand), sc.logScores(dom)
		return c[0]-d[0] > cfg.C1 && c[1]-d[1] > cfg.C2 && c[2]-d[2] > cfg.C3
	}
	cases := []struct {
		cand, dom activity
		want      bool
		rationale string
	}{
		{activity{9, 5, 3}, activity{}, true, "speech against silence"},
		{activity{4, 1, 1}, activity{}, true, "the least activity that beats silence"},
		{activity{3, 5, 3}, activity{}, false, "newest level too soft (immediate 3)"},
		{activity{9, 0, 3}, activity{}, false, "no active level in the newest 100 ms"},
		{activity{9, 5, 0}, activity{}, false, "no full active block: a transient"},
		{activity{9, 5, 3}, activity{0, 0, 2}, true, "the dominant paused and was less active"},
		{activity{9, 5, 3}, activity{0, 0, 3}, false, "equal long-term activity keeps the dominant"},
		{activity{9, 5, 10}, activity{9, 1, 10}, false, "the dominant is still talking (medium)"},
		{activity{9, 5, 10}, activity{4, 0, 1}, false, "the dominant is still talking (immediate)"},
	}
	for _, c := range cases {
		if got := beats(c.cand, c.dom); got != c.want {
			t.Errorf("%+v beats %+v = %v, want %v: %s", c.cand, c.dom, got, c.want, c.rationale)
		}
	}
}
