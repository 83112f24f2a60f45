package room

import (
	"slices"
	"testing"
	"time"

	"github.com/podium-sfu/podium/internal/algo/speaker"
	"github.com/podium-sfu/podium/internal/signal"
)

// TestFollowOrder: a room told another bridge's speaker order applies it —
// the dominant speaker to everyone, Last N from that order, members the
// other bridge does not list yet kept behind — and decides nothing itself
// while it follows, even with someone else speaking here; told to decide
// again, it goes on from the order it applied.
func TestFollowOrder(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the room's speaker decisions in real time (about 3 s)")
	}
	f := newFixture(t, Settings{LastN: 1, VideoPausing: true})
	a, b, c := f.join("a", true), f.join("b", true), f.join("c", true)
	f.join("d", true)

	f.room.FollowOrder(SpeakerOrder{Dominant: "c", Order: []string{"c", "x", "b", "a"}})
	for _, m := range []*fakeMember{a, b} {
		if got, _ := m.last(signal.TypeSpeaker); got != `{"id":"c"}` {
			t.Errorf("%s was told speaker %s, want c", m.id, got)
		}
		if got := m.selectedSources(); !slices.Equal(got, []string{"c"}) {
			t.Errorf("%s receives %v, want c's video (Last N 1)", m.id, got)
		}
	}
	if got := c.selectedSources(); !slices.Equal(got, []string{"b"}) {
		t.Errorf("c receives %v, want b's video (next in the order)", got)
	}
	if o, _ := f.room.SpeakerOrder(); o.Dominant != "c" || !slices.Equal(o.Order, []string{"c", "b", "a", "d"}) {
		t.Errorf("order %+v, want c first, then b, a and d (not listed there)", o)
	}

	// a speaks here; the room follows, so c stays.
	speak := func(d time.Duration) {
		start := time.Now()
		for time.Since(start) < d {
			f.room.do(func(s *state) {
				now := time.Now()
				level := uint8(80) // the first 200 ms: everyone's noise floor
				if now.Sub(start) > 200*time.Millisecond {
					level = 20
				}
				s.detector.Observe(now, "a", level)
				for _, id := range []string{"b", "c", "d"} {
					s.detector.Observe(now, speaker.ID(id), 80)
				}
			})
			time.Sleep(20 * time.Millisecond)
		}
	}
	speak(1500 * time.Millisecond)
	if o, _ := f.room.SpeakerOrder(); o.Dominant != "c" || f.room.Decisions() != 0 || a.count(signal.TypeSpeaker) != 2 {
		t.Fatalf("while following: dominant %q, %d decisions, a told %d speakers; want c, 0, 2 (at its join and c)",
			o.Dominant, f.room.Decisions(), a.count(signal.TypeSpeaker))
	}

	f.room.DecideOrder()
	speak(1500 * time.Millisecond)
	o, _ := f.room.SpeakerOrder()
	if o.Dominant != "a" || f.room.Decisions() != 1 || !slices.Equal(o.Order, []string{"a", "c", "b", "d"}) {
		t.Errorf("deciding again: %+v after %d decisions, want a first, then c, b and d, after 1", o, f.room.Decisions())
	}
	if got, _ := b.last(signal.TypeSpeaker); got != `{"id":"a"}` {
		t.Errorf("b was told speaker %s, want a", got)
	}
}
