package room

import (
	"testing"

	"github.com/podium-sfu/podium/internal/signal"
)

// TestApplySettingsInRevisionOrder: the cluster's settings apply in the
// order of their revisions whatever order they arrive in: a late, older one
// (a room opening with what it read before a change) is ignored, a repeated
// one too.
func TestApplySettingsInRevisionOrder(t *testing.T) {
	h := NewHubWith(DefaultSettings(), Limits{})
	defer h.Close()
	a := newFake("a")
	r, _, err := h.JoinWith("r", a, signal.Participant{ID: "a"}, subscribeOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Leave(r, a)
	n := func(v int) signal.RoomSettings { return signal.RoomSettings{LastN: &v} }
	steps := []struct {
		lastN   int
		rev     uint64
		applied bool
		want    int
	}{
		{5, 7, true, 5},
		{3, 6, false, 5}, // older: ignored
		{4, 7, false, 5}, // the same revision again
		{2, 9, true, 2},
	}
	for _, s := range steps {
		if got := r.ApplySettings(n(s.lastN), s.rev); got != s.applied || r.Settings().LastN != s.want {
			t.Fatalf("revision %d (Last N %d): applied %v, Last N %d; want %v, %d", s.rev, s.lastN, got, r.Settings().LastN, s.applied, s.want)
		}
	}
}
