package room

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/podium-sfu/podium/internal/signal"
)

// A room that requires E2EE refuses joins that do not announce it, keeps the
// participants already in it and says how many of them do not encrypt.
func TestRoomRequiresE2EE(t *testing.T) {
	h := NewHubWith(DefaultSettings(), Limits{})
	defer h.Close()
	plain, enc := newFake("plain"), newFake("enc")
	r, _, err := h.JoinWith("r", plain, signal.Participant{ID: "plain"}, subscribeOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Leave(r, plain)
	if _, _, err := h.JoinWith("r", enc, signal.Participant{ID: "enc", E2EE: true}, subscribeOnly); err != nil {
		t.Fatal(err)
	}
	defer h.Leave(r, enc)

	on, off := true, false
	if n := r.UpdateSettings(signal.RoomSettings{E2EERequired: &on}); n != 1 {
		t.Errorf("UpdateSettings reported %d unencrypted participants, want 1", n)
	}
	if msg, _ := enc.last(signal.TypeRoom); !strings.Contains(msg, `"e2eeRequired":true`) {
		t.Errorf("room message %s does not say e2eeRequired", msg)
	}
	if st, _ := r.Stats(time.Now()); !st.E2EERequired || st.Unencrypted != 1 || len(st.Participants) != 2 {
		t.Errorf("stats: e2eeRequired %v, unencrypted %d, %d participants; want true, 1, 2",
			st.E2EERequired, st.Unencrypted, len(st.Participants))
	}

	late := newFake("late")
	if _, _, err := h.JoinWith("r", late, signal.Participant{ID: "late"}, subscribeOnly); !errors.Is(err, ErrE2EERequired) {
		if err == nil {
			h.Leave(r, late)
		}
		t.Fatalf("plain join: %v, want ErrE2EERequired", err)
	}
	if enc.count(signal.TypeJoined) != 0 {
		t.Error("a refused join was announced")
	}
	if _, _, err := h.JoinWith("r", late, signal.Participant{ID: "late", E2EE: true}, subscribeOnly); err != nil {
		t.Fatalf("e2ee join: %v", err)
	}
	defer h.Leave(r, late)

	r.UpdateSettings(signal.RoomSettings{E2EERequired: &off})
	if msg, _ := enc.last(signal.TypeRoom); strings.Contains(msg, "e2ee") {
		t.Errorf("room message %s still mentions e2ee", msg)
	}
	again := newFake("again")
	if _, _, err := h.JoinWith("r", again, signal.Participant{ID: "again"}, subscribeOnly); err != nil {
		t.Fatalf("plain join after the requirement was lifted: %v", err)
	}
	h.Leave(r, again)
}
