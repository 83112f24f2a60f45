package alloc

import (
	"testing"
	"time"
)

// A trace of (seconds, break counter, current encoding, path) and the
// ceiling expected after each step. The paths name what bwe.Crowded and
// bwe.Clear make of them (TestCrowdedAndClear).
func TestBreakCeiling(t *testing.T) {
	const (
		crowded = 'c' // 10 % loss behind a 100 ms queue: ten flows
		one     = 'o' // 4.6 % loss behind 70 ms: one flow's overflow
		random  = 'r' // 8 % loss, no queue: random loss on a free path
		busy    = 'b' // 3 % loss behind 40 ms: neither crowded nor clear
		clear   = '-' // no loss, no queue: the flows stopped
	)
	path := map[rune][2]bool{ // crowded, clear
		crowded: {true, false},
		one:     {false, false},
		random:  {false, false},
		busy:    {false, false},
		clear:   {false, true},
	}
	type step struct {
		at      float64
		breaks  uint64
		current int
		path    rune
		want    int
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{"a break on the middle encoding on a crowded path: one lower for the hold", []step{
			{0, 0, 1, crowded, -1},
			{1, 1, 1, crowded, 0},
			{20, 1, 0, crowded, 0},
			{30.9, 1, 0, busy, 0},
			{31, 1, 0, crowded, -1}, // BreakHold after the break
		}},
		{"a break on the lower encoding under the ceiling lowers it again", []step{
			{0, 0, 2, crowded, -1},
			{1, 1, 2, crowded, 1},
			{5, 2, 1, crowded, 0},
			{34, 2, 0, crowded, 0}, // the hold renewed at 5 s
			{35, 2, 0, crowded, -1},
		}},
		{"breaks on the lowest encoding: nothing lower", []step{
			{0, 0, 0, crowded, -1},
			{1, 1, 0, crowded, -1},
			{3, 2, 0, crowded, -1},
		}},
		{"a video forwarded on no encoding makes no ceiling", []step{
			{0, 0, -1, crowded, -1},
			{1, 1, -1, crowded, -1},
		}},
		{"one flow's overflow, random loss or a busy path make no ceiling", []step{
			{0, 0, 2, one, -1},
			{1, 1, 2, one, -1},
			{3, 2, 2, random, -1},
			{5, 3, 2, busy, -1},
		}},
		{"the path clears: the ceiling goes at once", []step{
			{0, 0, 2, crowded, -1},
			{1, 1, 2, crowded, 1},
			{5, 1, 1, busy, 1},
			{6, 1, 1, random, 1}, // lossy, but no queue: not clear
			{7, 1, 1, clear, -1},
			{8, 1, 1, crowded, -1},
		}},
		{"breaks before the path was crowded do not count later", []step{
			{0, 0, 2, busy, -1},
			{1, 5, 2, busy, -1},
			{2, 5, 2, crowded, -1},
			{4, 5, 2, crowded, -1},
		}},
		{"the first observation's counter is history, not a break", []step{
			{0, 7, 2, crowded, -1},
			{2, 7, 2, crowded, -1},
		}},
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var c BreakCeiling
			for i, s := range tc.steps {
				now := t0.Add(time.Duration(s.at * float64(time.Second)))
				p := path[s.path]
				if got := c.Update(now, s.breaks, s.current, p[0], p[1]); got != s.want || c.Held() != got {
					t.Fatalf("step %d (%.1f s, breaks %d on %d, path %c): ceiling %d (held %d), want %d",
						i, s.at, s.breaks, s.current, s.path, got, c.Held(), s.want)
				}
			}
		})
	}
}
