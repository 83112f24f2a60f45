package audiosel

import (
	"math/rand"
	"slices"
	"testing"
	"time"

	"github.com/podium-sfu/podium/internal/algo/speaker"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func cfg(slots int) Config {
	return Config{Slots: slots, Hold: DefaultHold, Speaking: DefaultSpeaking}
}

func cands(scores map[ID]float64, order ...ID) []Candidate {
	out := make([]Candidate, 0, len(order))
	for _, id := range order {
		out = append(out, Candidate{ID: id, Score: scores[id]})
	}
	return out
}

func TestTopSpeakersReplaceSilentFillers(t *testing.T) {
	s := New(cfg(3))
	ids := []ID{"a", "b", "c", "d", "e", "f", "g", "h"}
	got := s.Update(t0, "", cands(nil, ids...), nil)
	if !slices.Equal(got, []ID{"a", "b", "c"}) {
		t.Fatalf("silent room: %v, want the first three as fillers", got)
	}
	scores := map[ID]float64{"d": 5, "f": 9, "h": 3, "b": 0.2}
	got = s.Update(t0.Add(300*time.Millisecond), "f", cands(scores, ids...), nil)
	slices.Sort(got)
	if !slices.Equal(got, []ID{"d", "f", "h"}) {
		t.Fatalf("got %v, want the three speakers d f h", got)
	}
}

func TestSmallRoomForwardsEveryone(t *testing.T) {
	s := New(cfg(3))
	got := s.Update(t0, "b", cands(map[ID]float64{"b": 4}, "a", "b"), nil)
	slices.Sort(got)
	if !slices.Equal(got, []ID{"a", "b"}) {
		t.Fatalf("got %v", got)
	}
}

func TestDominantAlwaysIn(t *testing.T) {
	s := New(cfg(2))
	ids := []ID{"a", "b", "c"}
	now := t0
	s.Update(now, "a", cands(map[ID]float64{"a": 8, "b": 8}, ids...), nil)
	// a and b keep talking; c becomes dominant: it must enter at once, in
	// place of one of them, though both are within their hold.
	now = now.Add(300 * time.Millisecond)
	got := s.Update(now, "c", cands(map[ID]float64{"a": 8, "b": 7, "c": 9}, ids...), nil)
	if !slices.Contains(got, "c") || len(got) != 2 {
		t.Fatalf("got %v, want the dominant c in", got)
	}
	// A dominant speaker is never the one evicted for another dominant.
	now = now.Add(300 * time.Millisecond)
	got = s.Update(now, "c", cands(map[ID]float64{"a": 9, "b": 9, "c": 1}, ids...), nil)
	if !slices.Contains(got, "c") {
		t.Fatalf("got %v, want the dominant c kept", got)
	}
}

func TestHoldThenReplace(t *testing.T) {
	s := New(cfg(1))
	ids := []ID{"a", "b"}
	now := t0
	s.Update(now, "a", cands(map[ID]float64{"a": 8}, ids...), nil)
	// a stops; b speaks but is not dominant (nor is a, which left the
	// detector, say): a is held for DefaultHold.
	for now = t0.Add(300 * time.Millisecond); now.Sub(t0) < DefaultHold; now = now.Add(300 * time.Millisecond) {
		if got := s.Update(now, "", cands(map[ID]float64{"b": 8}, ids...), nil); !slices.Equal(got, []ID{"a"}) {
			t.Fatalf("%v after a stopped: %v, want a held", now.Sub(t0), got)
		}
	}
	if got := s.Update(now, "", cands(map[ID]float64{"b": 8}, ids...), nil); !slices.Equal(got, []ID{"b"}) {
		t.Fatalf("after the hold: %v, want b", got)
	}
}

func TestLeaversAreDropped(t *testing.T) {
	s := New(cfg(2))
	s.Update(t0, "a", cands(map[ID]float64{"a": 8, "b": 8}, "a", "b"), nil)
	got := s.Update(t0.Add(time.Second), "", cands(nil, "b", "c"), nil)
	slices.Sort(got)
	if !slices.Equal(got, []ID{"b", "c"}) {
		t.Fatalf("got %v", got)
	}
}

func TestSetSlotsShrinksKeepingDominant(t *testing.T) {
	s := New(cfg(3))
	s.Update(t0, "c", cands(map[ID]float64{"a": 8, "b": 8, "c": 8}, "a", "b", "c"), nil)
	s.SetSlots(1, "c")
	if got := s.Update(t0.Add(time.Second), "c", cands(nil, "a", "b", "c"), nil); !slices.Equal(got, []ID{"c"}) {
		t.Fatalf("got %v, want c alone", got)
	}
}

func TestAssignKeepsSlots(t *testing.T) {
	slots := make([]ID, 3)
	if !Assign(slots, []ID{"a", "b", "c"}) || !slices.Equal(slots, []ID{"a", "b", "c"}) {
		t.Fatalf("first: %v", slots)
	}
	if !Assign(slots, []ID{"c", "d", "a"}) || !slices.Equal(slots, []ID{"a", "d", "c"}) {
		t.Fatalf("b replaced: %v, want d in b's slot, a and c unmoved", slots)
	}
	if Assign(slots, []ID{"d", "c", "a"}) {
		t.Fatal("same set in another order changed a slot")
	}
	if !Assign(slots, []ID{"c"}) || !slices.Equal(slots, []ID{"", "", "c"}) {
		t.Fatalf("shrunk: %v", slots)
	}
}

// A trace in simulated time through the real detector: levels every 20 ms,
// a decision every 300 ms, as the room runs them.
type talker struct {
	id    ID
	talks func(at time.Duration) bool
}

// words: speaks in words of 400 ms separated by 250 ms pauses, from start to end.
func words(start, end time.Duration) func(time.Duration) bool {
	return func(at time.Duration) bool {
		return at >= start && at < end && (at-start)%(650*time.Millisecond) < 400*time.Millisecond
	}
}

type step struct {
	at       time.Duration
	selected []ID
	dominant ID
}

func replay(t *testing.T, seed int64, slots int, dur time.Duration, talkers []talker) []step {
	t.Helper()
	r := rand.New(rand.NewSource(seed))
	dcfg := speaker.DefaultConfig()
	det := speaker.New(dcfg)
	sel := New(cfg(slots))
	for _, tk := range talkers {
		det.Add(t0, speaker.ID(tk.id))
	}
	var out []step
	var speech []speaker.Speech
	var cs []Candidate
	for at := time.Duration(0); at < dur; at += 20 * time.Millisecond {
		now := t0.Add(at)
		for _, tk := range talkers {
			level := uint8(70 + r.Intn(10)) // background noise
			if tk.talks(at) {
				level = uint8(15 + r.Intn(10))
			}
			det.Observe(now, speaker.ID(tk.id), level)
		}
		if next := det.NextTimeout(); now.Before(next) {
			continue
		}
		det.HandleTimeout(now)
		speech = det.Speech(speech[:0])
		cs = cs[:0]
		for _, tk := range talkers { // join order, as the room lists them
			for _, sp := range speech {
				if sp.ID == speaker.ID(tk.id) {
					cs = append(cs, Candidate{ID: tk.id, Score: ScoreOf(sp.Long, sp.Medium, dcfg.MediumBlock)})
				}
			}
		}
		dom := ID(det.Dominant())
		out = append(out, step{at: at, selected: sel.Update(now, dom, cs, nil), dominant: dom})
	}
	return out
}

// sentences: speaks in sentences of three words separated by 1.2 s pauses,
// from start to end.
func sentences(start, end time.Duration) func(time.Duration) bool {
	return func(at time.Duration) bool {
		in := (at - start) % (3150 * time.Millisecond) // 3 words of 650 ms, then the pause
		return at >= start && at < end && in < 1950*time.Millisecond && in%(650*time.Millisecond) < 400*time.Millisecond
	}
}

// Eight participants, A = 3: a and b talk in words throughout, c in
// sentences with long pauses from 2 s to 10 s, and d starts talking at 5 s.
// Nobody selected is dropped while talking or in a pause (d waits for c's
// hold after its last sentence), the dominant speaker is always in, and d
// is in at the end.
func TestTraceNoCutMidWordAndDominantIn(t *testing.T) {
	for seed := int64(1); seed <= 10; seed++ {
		never := func(time.Duration) bool { return false }
		talkers := []talker{
			{"a", words(0, 16*time.Second)},
			{"b", words(1*time.Second, 16*time.Second)},
			{"c", sentences(2*time.Second, 10*time.Second)},
			{"d", words(5*time.Second, 16*time.Second)},
			{"e", never}, {"f", never}, {"g", never}, {"h", never},
		}
		steps := replay(t, seed, 3, 16*time.Second, talkers)
		for _, st := range steps {
			if st.dominant != "" && !slices.Contains(st.selected, st.dominant) {
				t.Fatalf("seed %d at %v: dominant %s not in %v", seed, st.at, st.dominant, st.selected)
			}
			for _, tk := range talkers[:3] {
				// Talking for a second already (past its first words' detection).
				if tk.talks(st.at) && tk.talks(st.at-650*time.Millisecond) && !slices.Contains(st.selected, tk.id) {
					t.Fatalf("seed %d at %v: %s talking but not selected: %v", seed, st.at, tk.id, st.selected)
				}
			}
		}
		last := steps[len(steps)-1].selected
		slices.Sort(last)
		if !slices.Equal(last, []ID{"a", "b", "d"}) {
			t.Fatalf("seed %d: at the end %v, want a b d", seed, last)
		}
	}
}

// A = 2: a talks throughout, in words (dominant); b and c interject in alternation, a
// word of 400 ms every 3 s each, 1.5 s apart. Without the hold the second
// place would change hands at every word (about 20 times in 30 s); with it
// whichever took it keeps it while it keeps interjecting.
func TestTraceNoFlapping(t *testing.T) {
	interject := func(offset time.Duration) func(time.Duration) bool {
		return func(at time.Duration) bool {
			return at >= 2*time.Second && (at+offset)%(3*time.Second) < 400*time.Millisecond
		}
	}
	talkers := []talker{
		{"a", words(0, 30*time.Second)},
		{"b", interject(0)},
		{"c", interject(1500 * time.Millisecond)},
		{"d", func(time.Duration) bool { return false }},
	}
	const dur = 30 * time.Second
	for seed := int64(1); seed <= 10; seed++ {
		steps := replay(t, seed, 2, dur, talkers)
		changes := 0
		for i := 1; i < len(steps); i++ {
			if !slices.Equal(steps[i].selected, steps[i-1].selected) {
				changes++
			}
		}
		// The filler (b, or d) makes way for b or c once.
		if changes > 2 {
			t.Fatalf("seed %d: %d selection changes in %v, want at most 2", seed, changes, dur)
		}
	}
}
