package room

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/algo/alloc"
	"github.com/podium-sfu/podium/internal/algo/bwe"
	"github.com/podium-sfu/podium/internal/forward"
	"github.com/podium-sfu/podium/internal/signal"
)

// share publishes id's screen share (video and audio) and returns its tracks.
func (f *fixture) share(id string) (video, audio *forward.UpTrack) {
	m := f.members[id]
	src := signal.ScreenSource(id)
	video = upTrack(src, webrtc.RTPCodecTypeVideo, f.requests[id])
	audio = upTrack(src, webrtc.RTPCodecTypeAudio, f.requests[id])
	f.room.Publish(m, video)
	f.room.Publish(m, audio)
	return video, audio
}

// sources lists the sources of every track f receives, selected or not.
func (f *fakeMember) sources() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for d := range f.downs {
		out = append(out, d.Kind().String()+":"+d.Up().Source())
	}
	slices.Sort(out)
	return out
}

// A share is a source of its own: on stage for everyone (so inside even a Last
// N of 1, ahead of the speakers), never sent back to its sharer, announced in
// the sharer's participant info and the room's on-stage set; a receiver's pin
// still wins over it.
func TestScreenShareGoesOnStageForEveryone(t *testing.T) {
	f := newFixture(t, Settings{LastN: 1, VideoPausing: true})
	a, b, c := f.join("a", true), f.join("b", true), f.join("c", true)
	f.share("a")

	for m, want := range map[*fakeMember][]string{a: {"b"}, b: {"a-screen"}, c: {"a-screen"}} {
		if got := m.selectedSources(); !slices.Equal(got, want) {
			t.Errorf("%s receives %v, want %v", m.id, got, want)
		}
	}
	if got := b.sources(); !slices.Equal(got, []string{"audio:a", "audio:a-screen", "audio:c", "video:a", "video:a-screen", "video:c"}) {
		t.Errorf("b's tracks: %v", got)
	}
	if got := a.sources(); slices.ContainsFunc(got, func(s string) bool { return strings.HasSuffix(s, "a-screen") }) {
		t.Errorf("the sharer receives its own share: %v", got)
	}
	if got, _ := b.last(signal.TypeForwarded); got != `{"ids":["a-screen"],"lastN":1}` {
		t.Errorf("b was told forwarded %s", got)
	}
	if got, _ := c.entry("a"); !strings.Contains(got, `"screen":"a-screen"`) {
		t.Errorf("c was told %s, want a's participant info with its screen", got)
	}
	if i, j := c.index(signal.TypeParticipants), c.index(signal.TypeRoom); i < 0 || i > j {
		t.Errorf("c heard of a's share at %d, of the stage at %d: the stage came first", i, j)
	}
	if got, _ := c.last(signal.TypeRoom); got != `{"lastN":1,"onStage":["a-screen"]}` {
		t.Errorf("room state %s", got)
	}

	// b pins c: within its N of 1 the pin wins; with 2 it gets both, share first.
	if err := f.room.Pin(b, "c"); err != nil {
		t.Fatal(err)
	}
	if got := b.selectedSources(); !slices.Equal(got, []string{"c"}) {
		t.Errorf("b pinned c with N 1 and receives %v", got)
	}
	f.room.SetLastN(b, -1)
	f.room.UpdateSettings(signal.RoomSettings{LastN: new(2)})
	if got, _ := b.last(signal.TypeForwarded); got != `{"ids":["c","a-screen"],"lastN":2}` {
		t.Errorf("b with its pin and N 2 was told %s", got)
	}
	// The share can be pinned and given constraints by its id.
	if err := f.room.Pin(c, "a-screen"); err != nil {
		t.Errorf("pinning the share: %v", err)
	}
}

// Stopping the share (its tracks end) stops forwarding it to everyone,
// takes it off stage, drops what receivers named of it, and tells them.
func TestScreenShareStopCleansUp(t *testing.T) {
	f := newFixture(t, Settings{LastN: -1, VideoPausing: true})
	_, b, c := f.join("a", true), f.join("b", true), f.join("c", true)
	video, audio := f.share("a")
	if err := f.room.Pin(b, "a-screen"); err != nil {
		t.Fatal(err)
	}
	f.room.SetConstraints(c, map[string]signal.VideoConstraint{"a-screen": {Width: 1920, Height: 1080, Role: "stage"}})
	if cons, pins := named(f, "b"); pins != 1 || cons != 0 {
		t.Fatalf("b named %d pins, %d constraints", pins, cons)
	}

	f.room.Unpublish(f.members["a"], video)
	if got := b.selectedSources(); slices.Contains(got, "a-screen") {
		t.Errorf("b still receives the share's video after it ended: %v", got)
	}
	f.room.Unpublish(f.members["a"], audio)
	for _, m := range []*fakeMember{b, c} {
		if got := m.sources(); !slices.Equal(got, []string{"audio:a", "audio:" + other(m.id), "video:a", "video:" + other(m.id)}) {
			t.Errorf("%s still receives %v", m.id, got)
		}
		if got, _ := m.last(signal.TypeRoom); got != `{"lastN":-1,"onStage":[]}` {
			t.Errorf("%s: room state %s after the share ended", m.id, got)
		}
		if got, _ := m.last(signal.TypeUpdated); strings.Contains(got, "screen") {
			t.Errorf("%s was told %s after the share ended", m.id, got)
		}
	}
	if _, pins := named(f, "b"); pins != 0 {
		t.Errorf("b's pin of the ended share is kept")
	}
	if cons, _ := named(f, "c"); cons != 0 {
		t.Errorf("c's constraints of the ended share are kept")
	}
	if err := f.room.Pin(b, "a-screen"); err != ErrUnknownParticipant {
		t.Errorf("pinning an ended share: %v, want ErrUnknownParticipant", err)
	}

	// A sharer that leaves takes its share with it.
	f.share("a")
	f.leave("a")
	if got := b.sources(); !slices.Equal(got, []string{"audio:c", "video:c"}) {
		t.Errorf("after the sharer left b receives %v", got)
	}
	if got, _ := b.last(signal.TypeRoom); got != `{"lastN":-1,"onStage":[]}` {
		t.Errorf("room state %s after the sharer left", got)
	}
}

func other(id string) string {
	if id == "b" {
		return "c"
	}
	return "b"
}

// The allocator serves shares before cameras, whatever their Last N order.
func TestSharesFirst(t *testing.T) {
	sources := []alloc.Source{{ID: "b"}, {ID: "c"}, {ID: "a-screen"}, {ID: "d"}}
	sharesFirst(sources)
	var ids []string
	for i, s := range sources {
		ids = append(ids, s.ID)
		if s.Priority != i {
			t.Errorf("%s has priority %d at %d", s.ID, s.Priority, i)
		}
	}
	if !slices.Equal(ids, []string{"a-screen", "b", "c", "d"}) {
		t.Errorf("order %v", ids)
	}
}

// The admin API lists who shares, with the share's tracks; an administrator's
// video mute holds the share too.
func TestShareInStatsAndAdminMute(t *testing.T) {
	f := newFixture(t, Settings{LastN: -1, VideoPausing: true})
	f.join("a", true)
	b := f.join("b", true)
	video, _ := f.share("a")
	st, _ := f.room.Stats(time.Now())
	p := st.Participants[0]
	if p.Screen != "a-screen" || len(p.Publishing) != 4 || p.Publishing[2].Source != "screen" || p.Publishing[0].Source != "camera" {
		t.Errorf("a in stats: screen %q, publishing %+v", p.Screen, p.Publishing)
	}
	if st.Tracks["video"] != 3 || st.Tracks["audio"] != 3 {
		t.Errorf("room tracks %v", st.Tracks)
	}
	f.room.AdminMute("a", false, true)
	if !video.Muted() || !slices.Equal(b.selectedSources(), []string(nil)) {
		t.Errorf("video-muted sharer: share muted %v, b receives %v", video.Muted(), b.selectedSources())
	}
}

// With room for one video, a receiver's allocation keeps the share and
// suspends the camera, even one it pinned (which comes first in its Last N
// order): a share at a low rate is unreadable, a camera degrades gracefully.
func TestAllocatorPrefersTheShare(t *testing.T) {
	f := newFixture(t, Settings{LastN: -1, VideoPausing: true})
	cam := f.join("cam", false)
	a := f.join("a", false)
	cfg := bwe.DefaultConfig()
	cfg.StartBitrate = 400_000 // one ~300 kb/s video fits, two do not
	viewer := f.joinLinked("viewer", cfg)
	frame := func(i int) []byte { return vp8Packet(uint16(i), uint32(i*3000), i == 0, 1200) }
	f.room.Publish(cam, runningEncoding(t, "cam", "", frame, 33*time.Millisecond))
	f.room.Publish(a, runningEncoding(t, "a-screen", "", frame, 33*time.Millisecond))
	if err := f.room.Pin(viewer, "cam"); err != nil {
		t.Fatal(err)
	}
	if got, _ := viewer.last(signal.TypeForwarded); got != `{"ids":["cam","a-screen"],"lastN":-1}` {
		t.Fatalf("viewer forwarded %s", got)
	}
	// Once both rates are measured (a 2 s window), the share keeps all it
	// sends and the camera gives way: down to its base temporal layer, or
	// suspended.
	var st signal.Stats
	for deadline := time.Now().Add(8 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		raw, _ := viewer.last(signal.TypeStats)
		_ = json.Unmarshal([]byte(raw), &st)
		share, camera := st.Videos["a-screen"], st.Videos["cam"]
		reduced := func(v signal.VideoStats) bool { return v.Suspended || v.Temporal == 0 }
		if st.Allocated > 300_000 && (reduced(share) || reduced(camera)) {
			if reduced(share) {
				t.Fatalf("the share gave way to the camera: %s", raw)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no allocation with room for one video in 8 s: %s", raw)
		}
	}
	// And it stays so.
	time.Sleep(2 * time.Second)
	raw, _ := viewer.last(signal.TypeStats)
	_ = json.Unmarshal([]byte(raw), &st)
	if share := st.Videos["a-screen"]; share.Suspended || share.Temporal != 2 {
		t.Errorf("the share gave way to the camera later: %s", raw)
	}
}

// A participant joining during a share learns of it from the participant list
// and receives it on stage like everyone else.
func TestLateJoinerGetsTheShare(t *testing.T) {
	f := newFixture(t, Settings{LastN: 1, VideoPausing: true})
	f.join("a", true)
	f.share("a")
	d := newFake("d")
	_, others, err := f.hub.Join("r", d, signal.Participant{ID: "d", Name: "d"})
	if err != nil {
		t.Fatal(err)
	}
	f.members["d"] = d
	if len(others) != 1 || others[0].Screen != "a-screen" {
		t.Errorf("d was given %+v, want a with its screen", others)
	}
	if got := d.selectedSources(); !slices.Equal(got, []string{"a-screen"}) {
		t.Errorf("d receives %v, want the share", got)
	}
	if got, _ := d.last(signal.TypeRoom); got != `{"lastN":1,"onStage":["a-screen"]}` {
		t.Errorf("d was told room %s", got)
	}
}
