package server

import (
	"testing"
	"time"

	"github.com/podium-sfu/podium/internal/client"
)

func TestThreeParticipantsReceiveEachOther(t *testing.T) {
	srv := startServer(t, Options{})
	a := dial(t, srv, "meet", "A", true)
	b := dial(t, srv, "meet", "B", true)
	c := dial(t, srv, "meet", "C", true)
	ids := map[*client.Client]string{a: a.Snapshot().ID, b: b.Snapshot().ID, c: c.Snapshot().ID}
	for cl, self := range ids {
		var others []string
		for _, id := range ids {
			if id != self {
				others = append(others, id)
			}
		}
		waitFor(t, cl, "receive both others", 10*time.Second, receiving(others...))
		if _, ok := cl.Snapshot().Tracks["video-"+self]; ok {
			t.Errorf("%s receives its own video", self)
		}
	}

	// One leaves: the others hear of it and its tracks stop.
	b.Leave()
	for _, cl := range []*client.Client{a, c} {
		waitFor(t, cl, "B gone", 2*time.Second, func(s *client.State) bool {
			_, present := s.Participants[ids[b]]
			return !present
		})
	}
	time.Sleep(500 * time.Millisecond)
	before := a.Snapshot().Tracks["video-"+ids[b]].Packets
	time.Sleep(500 * time.Millisecond)
	if after := a.Snapshot().Tracks["video-"+ids[b]].Packets; after != before {
		t.Errorf("video of a departed participant still arriving: %d → %d packets", before, after)
	}
	waitFor(t, a, "still receiving C", 3*time.Second, receiving(ids[c]))
}

func TestRoomsAreIsolated(t *testing.T) {
	srv := startServer(t, Options{})
	a1 := dial(t, srv, "one", "A1", true)
	a2 := dial(t, srv, "one", "A2", true)
	b1 := dial(t, srv, "two", "B1", true)
	b2 := dial(t, srv, "two", "B2", true)
	waitFor(t, a1, "A1 receives A2", 10*time.Second, receiving(a2.Snapshot().ID))
	waitFor(t, b1, "B1 receives B2", 10*time.Second, receiving(b2.Snapshot().ID))
	time.Sleep(time.Second)
	for _, cl := range []*client.Client{a1, a2, b1, b2} {
		st := cl.Snapshot()
		if len(st.Participants) != 1 {
			t.Errorf("%s sees participants %v, want only its room-mate", st.ID, st.Participants)
		}
		if len(st.Tracks) != 2 {
			t.Errorf("%s receives %d tracks, want 2 (audio+video of its room-mate)", st.ID, len(st.Tracks))
		}
	}
}
