package load

import (
	"testing"
	"time"
)

// timeline replays a pattern for d in 10 ms steps and returns who spoke in each
// step.
func timeline(t *testing.T, s Speech, n int, d time.Duration) [][]bool {
	t.Helper()
	on := make([]bool, n)
	var out [][]bool
	for now := time.Duration(0); now < d; now += 10 * time.Millisecond {
		s.Advance(now, func(i int, v bool) {
			if on[i] == v {
				t.Fatalf("at %v speaker %d switched to %v twice", now, i, v)
			}
			on[i] = v
		})
		out = append(out, append([]bool(nil), on...))
	}
	return out
}

func speaking(step []bool) (n, who int) {
	who = -1
	for i, v := range step {
		if v {
			n++
			who = i
		}
	}
	return n, who
}

func TestPaperPatternOneSpeakerEvery4s(t *testing.T) {
	const n = 30
	s, err := NewSpeech(SpeechPaper, n, 7)
	if err != nil {
		t.Fatal(err)
	}
	steps := timeline(t, s, n, 2*time.Minute)
	changes, prev := 0, -1
	seen := map[int]bool{}
	for i, step := range steps {
		k, who := speaking(step)
		if k != 1 {
			t.Fatalf("at %v: %d speakers, want exactly 1", time.Duration(i)*10*time.Millisecond, k)
		}
		if who != prev {
			if prev >= 0 && i%400 != 0 {
				t.Fatalf("speaker changed at %v, not on a 4 s boundary", time.Duration(i)*10*time.Millisecond)
			}
			changes++
			prev = who
		}
		seen[who] = true
	}
	if changes != 30 {
		t.Errorf("%d speakers in 2 min, want 30 (a new one every 4 s)", changes)
	}
	if len(seen) < 15 {
		t.Errorf("only %d of %d participants spoke: not random", len(seen), n)
	}
}

func TestRealisticPattern(t *testing.T) {
	const n = 8
	s, err := NewSpeech(SpeechRealistic, n, 11)
	if err != nil {
		t.Fatal(err)
	}
	steps := timeline(t, s, n, 20*time.Minute)
	var silent, overlap int
	talk := make([]time.Duration, n)
	// Lengths of each participant's speech bursts.
	var bursts []time.Duration
	run := make([]time.Duration, n)
	for _, step := range steps {
		k, _ := speaking(step)
		switch {
		case k == 0:
			silent++
		case k > 1:
			overlap++
		}
		for i, v := range step {
			if v {
				run[i] += 10 * time.Millisecond
				talk[i] += 10 * time.Millisecond
			} else if run[i] > 0 {
				bursts = append(bursts, run[i])
				run[i] = 0
			}
		}
	}
	total := float64(len(steps))
	if f := float64(overlap) / total; f < 0.02 || f > 0.25 {
		t.Errorf("overlapping speech %.1f%% of the time, want a few to 25%%", 100*f)
	}
	if f := float64(silent) / total; f > 0.15 {
		t.Errorf("silence %.1f%% of the time, want little", 100*f)
	}
	short, long := 0, 0
	for _, b := range bursts {
		if b <= interjectionMax {
			short++
		}
		if b >= turnMin {
			long++
		}
	}
	if short < len(bursts)/4 || long < 20 {
		t.Errorf("%d interjections and %d turns among %d bursts", short, long, len(bursts))
	}
	for i, d := range talk {
		if d == 0 {
			t.Errorf("participant %d never spoke in 20 minutes", i)
		}
	}
}

func TestSpeechIsDeterministicAndSingleSpeakerWorks(t *testing.T) {
	a, _ := NewSpeech(SpeechRealistic, 5, 3)
	b, _ := NewSpeech(SpeechRealistic, 5, 3)
	ta, tb := timeline(t, a, 5, time.Minute), timeline(t, b, 5, time.Minute)
	for i := range ta {
		for j := range ta[i] {
			if ta[i][j] != tb[i][j] {
				t.Fatal("the same seed gave different patterns")
			}
		}
	}
	one, _ := NewSpeech(SpeechRealistic, 1, 3)
	on := 0
	for _, step := range timeline(t, one, 1, time.Minute) {
		if step[0] {
			on++
		}
	}
	if on < 4000 {
		t.Errorf("a lone speaker talks %d of 6000 steps", on)
	}
	if _, err := NewSpeech("shouting", 3, 1); err == nil {
		t.Error("an unknown pattern was accepted")
	}
}
