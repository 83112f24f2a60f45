package room

import (
	"errors"
	"fmt"
	"testing"

	"github.com/podium-sfu/podium/internal/signal"
)

// named is what the room keeps of what member id's client named: its
// constraints and pins.
func named(f *fixture, id string) (constraints, pins int) {
	f.room.do(func(s *state) {
		m := s.members[id]
		constraints, pins = len(m.constraints), len(m.pinned)
	})
	return constraints, pins
}

// A client naming thousands of ids that are not in the room, over many
// constraints messages, leaves its state at one entry per member it named;
// the entries of a participant who leaves go with it.
func TestConstraintsBoundedByMembership(t *testing.T) {
	f := newFixture(t, DefaultSettings())
	a := f.join("a", false)
	f.join("b", true)
	f.join("c", true)
	for msg := range 40 {
		videos := map[string]signal.VideoConstraint{"b": {Width: 320, Height: 180}, "c": {Width: 640, Height: 360}}
		for i := range 254 {
			videos[fmt.Sprintf("bogus-%d-%d", msg, i)] = signal.VideoConstraint{Width: 1, Height: 1}
		}
		f.room.SetConstraints(a, videos)
	}
	if n, _ := named(f, "a"); n != 2 {
		t.Fatalf("after 40 × 254 bogus ids, a's constraints hold %d entries, want 2 (b and c)", n)
	}
	f.leave("b")
	if n, _ := named(f, "a"); n != 1 {
		t.Errorf("after b left, a's constraints hold %d entries, want 1", n)
	}
}

// Pins name members only, at most MaxPins of them, and go when the pinned
// participant leaves.
func TestPinsBoundedAndPruned(t *testing.T) {
	f := newFixture(t, DefaultSettings())
	a := f.join("a", false)
	for i := range MaxPins + 1 {
		f.join(fmt.Sprint("m", i), true)
	}
	if err := f.room.Pin(a, "nobody"); !errors.Is(err, ErrUnknownParticipant) {
		t.Errorf("pin of an absent id: %v, want ErrUnknownParticipant", err)
	}
	for i := range MaxPins {
		if err := f.room.Pin(a, fmt.Sprint("m", i)); err != nil {
			t.Fatalf("pin %d: %v", i, err)
		}
	}
	if err := f.room.Pin(a, "m0"); err != nil {
		t.Errorf("pinning a pinned id again: %v, want nothing", err)
	}
	if err := f.room.Pin(a, fmt.Sprint("m", MaxPins)); !errors.Is(err, ErrTooManyPins) {
		t.Errorf("pin %d: %v, want ErrTooManyPins", MaxPins+1, err)
	}
	if _, pins := named(f, "a"); pins != MaxPins {
		t.Fatalf("a has %d pins, want %d", pins, MaxPins)
	}
	f.leave("m3")
	if _, pins := named(f, "a"); pins != MaxPins-1 {
		t.Errorf("after m3 left a has %d pins, want %d", pins, MaxPins-1)
	}
	if err := f.room.Pin(a, fmt.Sprint("m", MaxPins)); err != nil {
		t.Errorf("pin after a pinned participant left: %v", err)
	}
}
