package room

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/signal"
)

var subscribeOnly = JoinOptions{Permissions: signal.Permissions{Subscribe: true}}

func TestMaxParticipants(t *testing.T) {
	h := NewHubWith(DefaultSettings(), Limits{MaxParticipants: 2})
	defer h.Close()
	a, b, c := newFake("a"), newFake("b"), newFake("c")
	ra, _, err := h.JoinWith("r", a, signal.Participant{ID: "a"}, subscribeOnly)
	if err != nil {
		t.Fatal(err)
	}
	rb, _, err := h.JoinWith("r", b, signal.Participant{ID: "b"}, subscribeOnly)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.JoinWith("r", c, signal.Participant{ID: "c"}, subscribeOnly); !errors.Is(err, ErrRoomFull) {
		t.Fatalf("third join: %v, want ErrRoomFull", err)
	}
	ra.settle()
	if _, ok := a.entry("c"); ok || len(a.diffs()) != 1 {
		t.Error("a refused join was announced")
	}
	// A resumed session replaces its old self even in a full room.
	a2 := newFake("a")
	if _, _, err := h.JoinWith("r", a2, signal.Participant{ID: "a"}, JoinOptions{Resume: true}); err != nil {
		t.Errorf("resume into a full room: %v", err)
	}
	// Another room is not full.
	rc, _, err := h.JoinWith("other", c, signal.Participant{ID: "c"}, subscribeOnly)
	if err != nil {
		t.Fatal(err)
	}
	h.Leave(ra, a)
	h.Leave(ra, a2)
	h.Leave(rb, b)
	h.Leave(rc, c)
	if n := h.Sessions(); n != 0 {
		t.Errorf("%d sessions after everyone left", n)
	}
}

func TestMaxRooms(t *testing.T) {
	h := NewHubWith(DefaultSettings(), Limits{MaxRooms: 2})
	defer h.Close()
	var joined []func()
	for i, name := range []string{"r1", "r2", "r1"} { // a second participant in r1 is fine
		m := newFake(fmt.Sprint("p", i))
		r, _, err := h.JoinWith(name, m, signal.Participant{ID: m.id}, subscribeOnly)
		if err != nil {
			t.Fatalf("join %s: %v", name, err)
		}
		joined = append(joined, func() { h.Leave(r, m) })
	}
	m := newFake("x")
	if _, _, err := h.JoinWith("r3", m, signal.Participant{ID: "x"}, subscribeOnly); !errors.Is(err, ErrTooManyRooms) {
		t.Fatalf("third room: %v, want ErrTooManyRooms", err)
	}
	if len(h.Rooms()) != 2 {
		t.Errorf("%d rooms", len(h.Rooms()))
	}
	joined[1]() // r2 ends: room for r3
	r, _, err := h.JoinWith("r3", m, signal.Participant{ID: "x"}, subscribeOnly)
	if err != nil {
		t.Fatalf("after a room ended: %v", err)
	}
	h.Leave(r, m)
	joined[0]()
	joined[2]()
}

func TestDrain(t *testing.T) {
	h := NewHub(DefaultSettings())
	defer h.Close()
	a := newFake("a")
	r, _, err := h.Join("r", a, signal.Participant{ID: "a"})
	if err != nil {
		t.Fatal(err)
	}
	notice := signal.Draining{Deadline: "2026-03-01T12:00:30Z", Seconds: 30}
	h.Drain(notice)
	h.Drain(signal.Draining{Seconds: 1}) // the first notice stands
	if got, _ := a.last(signal.TypeDraining); got != `{"deadline":"2026-03-01T12:00:30Z","seconds":30}` {
		t.Errorf("participant told %q", got)
	}
	if got, ok := h.Draining(); !ok || got != notice {
		t.Errorf("Draining = %+v %v", got, ok)
	}
	for name, opts := range map[string]JoinOptions{"new room": {}, "live room, not a resume": {}} {
		room := "r"
		if name == "new room" {
			room = "new"
		}
		if _, _, err := h.JoinWith(room, newFake("b"), signal.Participant{ID: "b"}, opts); !errors.Is(err, ErrDraining) {
			t.Errorf("%s: %v, want ErrDraining", name, err)
		}
	}
	if _, _, err := h.JoinWith("new", newFake("a"), signal.Participant{ID: "a"}, JoinOptions{Resume: true}); !errors.Is(err, ErrDraining) {
		t.Errorf("resume into a room that does not exist: %v", err)
	}
	a2 := newFake("a")
	if _, _, err := h.JoinWith("r", a2, signal.Participant{ID: "a"}, JoinOptions{Resume: true}); err != nil {
		t.Errorf("resume into a live room while draining: %v", err)
	}
	h.Leave(r, a)
	h.Leave(r, a2)
	if h.Sessions() != 0 || len(h.Rooms()) != 0 {
		t.Errorf("sessions %d rooms %d", h.Sessions(), len(h.Rooms()))
	}
}

// TestSubscribeOnlyGetsMediaOthersDoNotGetTheirs: without subscribe, a member is
// sent nothing; others still receive publishers.
func TestSubscribePermission(t *testing.T) {
	f := newFixture(t, Settings{LastN: -1})
	f.join("pub", true)
	deaf := newFake("deaf")
	_, _, err := f.hub.JoinWith("r", deaf, signal.Participant{ID: "deaf"}, JoinOptions{Permissions: signal.Permissions{Publish: true}})
	if err != nil {
		t.Fatal(err)
	}
	f.members["deaf"] = deaf
	f.join("late", true)
	listener := newFake("listener")
	if _, _, err := f.hub.JoinWith("r", listener, signal.Participant{ID: "listener"}, subscribeOnly); err != nil {
		t.Fatal(err)
	}
	f.members["listener"] = listener
	if len(deaf.downs) != 0 {
		t.Errorf("a member without subscribe receives %d tracks", len(deaf.downs))
	}
	if len(listener.downs) != 4 {
		t.Errorf("subscribe-only member receives %d tracks, want 4", len(listener.downs))
	}
	f.room.settle()
	if _, ok := deaf.entry("listener"); !ok {
		t.Error("a member without subscribe still sees who joins")
	}
}

// A member without subscribe is sent no video, so it watches nobody: publishers
// only it would "see" are paused (found with publish-only synthetic publishers
// beside one browser: off-page senders kept sending).
func TestPublishOnlyMembersKeepNobodyUnpaused(t *testing.T) {
	f := newFixture(t, Settings{LastN: 1, VideoPausing: true})
	publishOnly := JoinOptions{Permissions: signal.Permissions{Publish: true}}
	for _, id := range []string{"a", "b"} {
		m := newFake(id)
		r, _, err := f.hub.JoinWith("r", m, signal.Participant{ID: id}, publishOnly)
		if err != nil {
			t.Fatal(err)
		}
		f.room, f.members[id], f.requests[id] = r, m, new(int)
		r.Publish(m, upTrack(id, webrtc.RTPCodecTypeAudio, f.requests[id]))
		r.Publish(m, upTrack(id, webrtc.RTPCodecTypeVideo, f.requests[id]))
	}
	viewer := f.join("viewer", false)
	if got := viewer.selectedSources(); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("the viewer receives %v, want [a]", got)
	}
	if a, b := f.members["a"], f.members["b"]; a.paused() || !b.paused() {
		t.Errorf("paused: a %v, b %v; want only b: a (publish-only) selects b but is sent nothing", a.paused(), b.paused())
	}
}

func TestAdminMute(t *testing.T) {
	f := newFixture(t, Settings{LastN: -1, VideoPausing: true})
	a, b := f.join("a", true), f.join("b", true)
	if got := b.selectedSources(); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("b receives %v", got)
	}
	if !f.room.AdminMute("a", true, true) {
		t.Fatal("a not found")
	}
	if got, _ := a.last(signal.TypeMuted); got != `{"audio":true,"video":true}` {
		t.Errorf("a told %q", got)
	}
	f.room.settle()
	if got, _ := b.entry("a"); !strings.Contains(got, `"audioMuted":true,"videoMuted":true`) {
		t.Errorf("b sees %q", got)
	}
	for d := range b.downs {
		if !d.Up().Muted() {
			t.Errorf("a's %s not muted at the source", d.Kind())
		}
	}
	if got := b.selectedSources(); len(got) != 0 {
		t.Errorf("b still selects %v", got)
	}
	if !a.paused() {
		t.Error("a's muted video still wanted")
	}
	// a's client saying it unmuted changes nothing while the administrator's mute stands.
	f.room.SetMute(a, false, false)
	f.room.settle()
	if got, _ := b.entry("a"); !strings.Contains(got, `"audioMuted":true,"videoMuted":true`) {
		t.Errorf("after the client unmuted, b sees %q", got)
	}
	// A track published while muted starts muted.
	extra := upTrack("a", webrtc.RTPCodecTypeAudio, new(int))
	f.room.Publish(a, extra)
	if !extra.Muted() {
		t.Error("a track published while muted forwards")
	}
	f.room.AdminMute("a", false, false)
	for d := range b.downs {
		if d.Up().Muted() {
			t.Errorf("a's %s still muted", d.Kind())
		}
	}
	if got := b.selectedSources(); !slices.Equal(got, []string{"a"}) || a.paused() {
		t.Errorf("after unmute b receives %v, a paused %v", got, a.paused())
	}
	// (Selected again, b's DownTrack resumes at a keyframe it asks for.)
	f.room.settle()
	if got, _ := b.entry("a"); !strings.Contains(got, `"audioMuted":false,"videoMuted":false`) {
		t.Errorf("after the mute was lifted b sees %q", got)
	}
	if f.room.AdminMute("nobody", true, false) {
		t.Error("muted someone absent")
	}
}

func TestRemoveAndClose(t *testing.T) {
	f := newFixture(t, Settings{LastN: -1})
	a, b, c := f.join("a", false), f.join("b", false), f.join("c", false)
	if !f.room.Remove("a", signal.ByeRemoved, "removed by an administrator") {
		t.Fatal("a not found")
	}
	if got, _ := a.last(signal.TypeBye); got != `{"reason":"removed by an administrator","code":"removed"}` {
		t.Errorf("a told %q", got)
	}
	if f.room.Remove("zed", signal.ByeRemoved, "x") {
		t.Error("removed someone absent")
	}
	if n := f.room.CloseRoom("room closed by an administrator"); n != 3 {
		t.Errorf("close told %d", n)
	}
	for _, m := range []*fakeMember{b, c} {
		if got, _ := m.last(signal.TypeBye); !strings.Contains(got, `"code":"room-closed"`) {
			t.Errorf("%s told %q", m.id, got)
		}
	}
}

// TestStatsAndTotals: per-room stats list members and tracks; counters of tracks
// and rooms that ended stay in the totals, so they never go backwards.
func TestStatsAndTotals(t *testing.T) {
	h := NewHub(Settings{LastN: -1})
	defer h.Close()
	a, b := newFake("a"), newFake("b")
	r, _, _ := h.JoinWith("r", a, signal.Participant{ID: "a", Name: "Ann"}, JoinOptions{Identity: "ann@example.org", Permissions: signal.Permissions{Publish: true, Subscribe: true}})
	_, _, _ = h.Join("r", b, signal.Participant{ID: "b", Name: "Bob"})
	up := upTrack("a", webrtc.RTPCodecTypeAudio, new(int))
	up.Stats().Packets.Add(10)
	up.Stats().Bytes.Add(1000)
	up.Stats().Malformed.Add(2)
	r.Publish(a, up)
	st, ok := r.Stats(time.Now())
	if !ok || st.Name != "r" || len(st.Participants) != 2 || st.Tracks["audio"] != 1 || st.Forwarding["audio"] != 1 {
		t.Fatalf("stats %+v", st)
	}
	pa := st.Participants[0]
	if pa.ID != "a" || pa.Identity != "ann@example.org" || len(pa.Publishing) != 1 || pa.Publishing[0].Packets != 10 || st.Participants[1].Receiving != 1 {
		t.Errorf("participant a %+v, b %+v", pa, st.Participants[1])
	}
	if k := st.Totals.Kinds[KindAudio]; k.PacketsIn != 10 || k.BytesIn != 1000 || k.Dropped[DropMalformed] != 2 || k.Dropped[DropUnbound] != 0 {
		t.Errorf("totals %+v", k)
	}
	up.Stats().Packets.Add(5)
	r.Unpublish(a, up)
	st, _ = r.Stats(time.Now())
	if st.Totals.Kinds[KindAudio].PacketsIn != 15 || st.Tracks["audio"] != 0 {
		t.Errorf("after unpublish: %+v", st.Totals.Kinds[KindAudio])
	}
	h.Leave(r, a)
	h.Leave(r, b)
	if _, ok := r.Stats(time.Now()); ok {
		t.Error("stats of an ended room")
	}
	if got := r.FinalTotals(); got.Kinds[KindAudio].PacketsIn != 15 {
		t.Errorf("final totals %+v", got.Kinds[KindAudio])
	}
	h.mu.Lock()
	retired := h.retired
	h.mu.Unlock()
	if retired.Kinds[KindAudio].PacketsIn != 15 {
		t.Errorf("hub totals %+v", retired.Kinds[KindAudio])
	}
}
