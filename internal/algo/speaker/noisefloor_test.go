package speaker

import (
	"slices"
	"testing"
	"time"
)

func repeat(level uint8, n int) []uint8 {
	return slices.Repeat([]uint8{level}, n)
}

func TestNoiseFloor(t *testing.T) {
	cases := []struct {
		name   string
		levels [][]uint8
		want   uint8
	}{
		{"silence is ignored", [][]uint8{repeat(0, 10)}, 0},
		{"first level sets the floor", [][]uint8{{50}}, 50},
		{"a lower level replaces it at once", [][]uint8{{50, 40}}, 40},
		{"higher levels wait for a full window", [][]uint8{{40}, repeat(60, 749)}, 40},
		{"then rise by the geometric mean", [][]uint8{{40}, repeat(60, 750)}, 48},               // √(40·60) = 48.99
		{"to the window's minimum", [][]uint8{{40}, repeat(60, 700), {50}, repeat(60, 49)}, 44}, // √(40·50) = 44.7
		{"a lower level restarts the window", [][]uint8{{40}, repeat(60, 700), {30}, repeat(60, 700)}, 30},
		{"silence does not fill the window", [][]uint8{{40}, repeat(60, 749), repeat(0, 10)}, 40},
		{"two windows, truncating", [][]uint8{{40}, repeat(60, 1500)}, 53}, // √(48·60) = 53.67
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := noiseFloor{window: 750}
			for _, part := range c.levels {
				for _, l := range part {
					f.update(l)
				}
			}
			if f.floor != c.want {
				t.Errorf("floor = %d, want %d", f.floor, c.want)
			}
		})
	}
}

// Requirement 5 via the noise floor: a participant with loud constant
// background noise (a fan, a street) never becomes dominant, though its raw
// levels are as high as quiet speech and it sends them all the time.
func TestConstantNoiseNeverDominant(t *testing.T) {
	t.Parallel()
	for seed := range int64(seeds) {
		noisy := voice{speech: 20, noise: 35} // −35 dBov of noise: louder than the quiet voice's speech
		s := newScene(seed, noisy, loud, quiet)
		s.tracks[0].silence(40 * time.Second)
		b, c := s.tracks[1], s.tracks[2]
		b.silence(5 * time.Second)
		b.speech(10 * time.Second)
		c.until(b.len() + slots(5*time.Second))
		c.speech(10 * time.Second)
		events := s.run()
		for _, e := range events {
			if e.Dominant == "a" {
				t.Errorf("seed %d: the noisy participant became dominant: %v", seed, events)
				break
			}
		}
		if dominantAt(events, 40*time.Second) != "c" {
			t.Errorf("seed %d: want c dominant at the end: %v", seed, events)
		}
	}
}

// The floor follows a participant whose background noise rises by 35 dB (from
// −80 to −45 dBov, where it reads like speech): it rises one geometric step
// per 15 s window until the noise no longer counts as activity. Until then
// the steady noise is indistinguishable from speech without pauses, so it
// takes the floor and keeps it: the test measures that span and asserts that
// it ends, after which the noise never takes the floor again.
func TestNoiseFloorFollowsRise(t *testing.T) {
	t.Parallel()
	const rise = 5 * time.Second
	s := newScene(1, voice{speech: 20, noise: 80}, loud)
	r, b := s.tracks[0], s.tracks[1]
	r.silence(rise)
	r.v.noise = 45
	r.silence(150 * time.Second)

	// b talks at the start, then 3 s every 10 s.
	b.speech(3 * time.Second)
	for b.len() < r.len()-slots(10*time.Second) {
		b.silence(7 * time.Second)
		b.speech(3 * time.Second)
	}
	d := New(DefaultConfig())
	events := s.runWith(d)

	took, ok := firstSwitchTo(events, "a", rise)
	if !ok {
		t.Fatalf("the noise never took the floor; events %v", events)
	}
	back, ok := firstSwitchTo(events, "b", took)
	if !ok {
		t.Fatalf("b never got the floor back; events %v", events)
	}
	floor := d.byID["a"].floor.floor
	t.Logf("noise level %d held the floor from %v to %v after rising; final floor %d",
		MaxLevel-45, took-rise, back-rise, floor)
	if back-rise > 90*time.Second {
		t.Errorf("the noise held the floor for %v", back-took)
	}
	if _, ok := firstSwitchTo(events, "a", back); ok {
		t.Errorf("the noise took the floor again after adapting; events %v", events)
	}
	if int(floor)+DefaultConfig().subunit() <= MaxLevel-45+2 {
		t.Errorf("floor %d did not follow the noise at level %d±2", floor, MaxLevel-45)
	}
}
