package room

import (
	"testing"
	"time"

	"github.com/podium-sfu/podium/internal/algo/layers"
	"github.com/podium-sfu/podium/internal/signal"
)

// fakeRemote is a participant served by another bridge, with its origin's
// view of its encodings.
type fakeRemote struct {
	*fakeMember
	encs []RemoteEncoding
}

func (f *fakeRemote) Remote() bool { return true }
func (f *fakeRemote) Encodings(source string) ([]RemoteEncoding, bool) {
	return f.encs, source == f.id
}

// A participant of another bridge is announced to local members, publishes
// tracks they receive, receives nothing here, is not listed as served here,
// holds no reference on the room, and its encodings are as its origin
// reports them: a receiver here targets the best encoding on at the sender
// although nothing of it arrived here, and asks for the one it would rather
// have to be switched on.
func TestRemoteParticipant(t *testing.T) {
	f := newFixture(t, Settings{LastN: -1, VideoPausing: true})
	a := f.join("a", true)
	r := &fakeRemote{fakeMember: newFake("r"), encs: []RemoteEncoding{
		{Width: 320, Height: 180, Active: true, Bitrate: 150e3, Temporal: [3]int{60e3, 90e3, 150e3}},
		{Width: 640, Height: 360, Active: true, Bitrate: 500e3, Temporal: [3]int{200e3, 300e3, 500e3}},
		{Width: 1280, Height: 720, Active: false, Bitrate: 1500e3, Temporal: [3]int{600e3, 900e3, 1500e3}},
	}}
	if err := f.room.AddRemote(r, signal.Participant{ID: "r", Name: "Remote"}); err != nil {
		t.Fatal(err)
	}
	f.room.settle()
	if got, _ := a.entry("r"); got != `{"id":"r","name":"Remote","audioMuted":false,"videoMuted":false}` {
		t.Errorf("a heard %q", got)
	}
	for _, rid := range []string{"q", "h", "f"} {
		f.room.Publish(r, encodingUp("r", rid, nil))
	}
	if len(r.downs) != 0 {
		t.Errorf("the remote participant is sent %d tracks here", len(r.downs))
	}
	f.room.do(func(s *state) {
		s.members["a"].constraints["r"] = layers.Want{Stage: true}
		s.maintainLayers(time.Now())
	})
	var target int
	a.mu.Lock()
	for d := range a.downs {
		if d.Up().Source() == "r" {
			target, _ = d.Layers()
		}
	}
	a.mu.Unlock()
	// Without the origin's view nothing here is active, and the stage
	// would target encoding 2, which does not flow.
	if target != 1 {
		t.Errorf("a targets r's encoding %d, want 1 (the origin reports 0 and 1 on, 2 off)", target)
	}
	// The encoding the stage wants is asked back on at the sender.
	if w := f.room.RemoteWants()["r"]; len(w) != 3 || !w[2] {
		t.Errorf("wanted of r's sender: %v, want encoding 2 kept on", w)
	}
	if st, _ := f.room.Stats(time.Now()); len(st.Participants) != 1 || st.Participants[0].ID != "a" {
		t.Errorf("stats list %+v, want a alone: its own bridge lists r", st.Participants)
	}
	locals := f.room.Locals()
	if len(locals) != 1 || locals[0].Info.ID != "a" || len(locals[0].Ups) != 2 {
		t.Errorf("locals %+v, want a alone with its two tracks", locals)
	}
	f.leave("a")
	if _, ok := f.hub.Room("r"); ok {
		t.Error("the room outlived its last local participant")
	}
}

// What another bridge's receivers need keeps a sender unpaused and its
// encodings on, as a local receiver would.
func TestRemoteDemandKeepsSenderUnpaused(t *testing.T) {
	f := newFixture(t, Settings{LastN: -1, VideoPausing: true})
	a := f.join("a", true)
	if !a.paused() {
		t.Fatal("a alone is not paused")
	}
	f.room.SetRemoteDemand("node1", map[string][]bool{"a": {true}})
	if a.paused() {
		t.Error("a paused although another bridge receives its video")
	}
	f.room.SetRemoteDemand("node1", nil)
	if !a.paused() {
		t.Error("a not paused once the other bridge forgot it")
	}
}
