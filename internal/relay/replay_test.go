package relay

import "testing"

func TestWindow(t *testing.T) {
	type step struct {
		c    uint64
		want bool
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{"in order", []step{{1, true}, {2, true}, {3, true}}},
		{"replay", []step{{1, true}, {2, true}, {2, false}, {1, false}}},
		{"reordered within window", []step{{10, true}, {5, true}, {7, true}, {5, false}, {9, true}, {11, true}}},
		{"too old", []step{{2000, true}, {2000 - WindowSize + 1, true}, {2000 - WindowSize, false}, {1, false}}},
		{"jump beyond window forgets", []step{{1, true}, {1 + 5*WindowSize, true}, {1 + 5*WindowSize - 1, true}, {1, false}}},
		{"skipped then filled", []step{{1, true}, {100, true}, {50, true}, {50, false}, {99, true}, {101, true}}},
		{"slot reuse after wrap", []step{{5, true}, {5 + WindowSize, true}, {5, false}, {5 + 2*WindowSize, true}, {5 + WindowSize, false}}},
		{"zero first", []step{{0, true}, {0, false}, {1, true}}},
	}
	for _, c := range cases {
		var w Window
		for i, s := range c.steps {
			got := w.Check(s.c)
			if got != s.want {
				t.Fatalf("%s: step %d counter %d: accepted %v, want %v", c.name, i, s.c, got, s.want)
			}
			if got {
				w.Accept(s.c)
			}
		}
	}
}
