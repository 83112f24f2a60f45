package room

import (
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/forward"
	"github.com/podium-sfu/podium/internal/signal"
)

// fakeMember records what the room tells a session.
type fakeMember struct {
	id       string
	mu       sync.Mutex
	msgs     []string // "type {json}"
	downs    map[*forward.DownTrack]bool
	replaced bool
	rtt      time.Duration
	link     *forward.Link // nil: no congestion control
	// frames: Send keeps the last frame signal.Encode makes, as a session
	// sends it, instead of the message (allocation tests).
	frames bool
	frame  []byte
}

func newFake(id string) *fakeMember {
	return &fakeMember{id: id, downs: map[*forward.DownTrack]bool{}}
}

func (f *fakeMember) ID() string { return f.id }
func (f *fakeMember) Send(typ string, body any) {
	if f.frames {
		frame, _ := signal.Encode(typ, body)
		f.mu.Lock()
		f.frame = frame
		f.mu.Unlock()
		return
	}
	b, _ := json.Marshal(body)
	f.mu.Lock()
	f.msgs = append(f.msgs, typ+" "+string(b))
	f.mu.Unlock()
}
func (f *fakeMember) AddDownTrack(d *forward.DownTrack) {
	f.mu.Lock()
	f.downs[d] = true
	f.mu.Unlock()
	if f.link != nil {
		d.SetLink(f.link)
	}
}
func (f *fakeMember) RemoveDownTrack(d *forward.DownTrack) {
	f.mu.Lock()
	delete(f.downs, d)
	f.mu.Unlock()
}
func (f *fakeMember) Replaced() { f.mu.Lock(); f.replaced = true; f.mu.Unlock() }
func (f *fakeMember) Remove(code, reason string) {
	f.Send(signal.TypeBye, signal.Bye{Code: code, Reason: reason})
}
func (f *fakeMember) Failed(reason string) {
	f.Send(signal.TypeError, signal.Error{Code: signal.CodeInternal, Message: reason, Fatal: true})
}
func (f *fakeMember) Link() *forward.Link { return f.link }
func (f *fakeMember) RTT() (time.Duration, time.Duration) {
	return f.rtt, f.rtt
}

func (f *fakeMember) last(typ string) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := len(f.msgs) - 1; i >= 0; i-- {
		if len(f.msgs[i]) > len(typ) && f.msgs[i][:len(typ)+1] == typ+" " {
			return f.msgs[i][len(typ)+1:], true
		}
	}
	return "", false
}

func (f *fakeMember) count(typ string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, m := range f.msgs {
		if len(m) > len(typ) && m[:len(typ)+1] == typ+" " {
			n++
		}
	}
	return n
}

// entry is the JSON of the latest participants entry f got for id, if any.
func (f *fakeMember) entry(id string) (string, bool) {
	for _, d := range f.diffs() {
		for _, p := range d.Participants {
			if p.ID == id {
				b, _ := json.Marshal(p)
				return string(b), true
			}
		}
	}
	return "", false
}

// heardLeft reports whether a participants message told f that id left.
func (f *fakeMember) heardLeft(id string) bool {
	for _, d := range f.diffs() {
		if slices.Contains(d.Left, id) {
			return true
		}
	}
	return false
}

// diffs are the participants messages f got, the latest first.
func (f *fakeMember) diffs() []signal.ParticipantDiff {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []signal.ParticipantDiff
	for i := len(f.msgs) - 1; i >= 0; i-- {
		if body, ok := strings.CutPrefix(f.msgs[i], signal.TypeParticipants+" "); ok {
			var d signal.ParticipantDiff
			if err := json.Unmarshal([]byte(body), &d); err != nil {
				panic(err)
			}
			out = append(out, d)
		}
	}
	return out
}

// index is the position of the last message of type typ f got (-1: none).
func (f *fakeMember) index(typ string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := len(f.msgs) - 1; i >= 0; i-- {
		if strings.HasPrefix(f.msgs[i], typ+" ") {
			return i
		}
	}
	return -1
}

// paused reports whether the last pause/resume message f got was a pause.
func (f *fakeMember) paused() bool {
	return f.count(signal.TypePauseVideo) > f.count(signal.TypeResumeVideo)
}

// selectedSources lists the sources whose video f currently receives.
func (f *fakeMember) selectedSources() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for d := range f.downs {
		if d.Kind() == webrtc.RTPCodecTypeVideo && d.Selected() {
			out = append(out, d.Up().Source())
		}
	}
	slices.Sort(out)
	return out
}

// upTrack builds a track that is never read; keyframe requests are counted.
func upTrack(source string, kind webrtc.RTPCodecType, requests *int) *forward.UpTrack {
	mime := webrtc.MimeTypeVP8
	if kind == webrtc.RTPCodecTypeAudio {
		mime = webrtc.MimeTypeOpus
	}
	return forward.NewUpTrack(forward.UpTrackParams{
		Source: source, Kind: kind, SSRC: 1, Codec: webrtc.RTPCodecCapability{MimeType: mime},
		SendKeyframeRequest: func(uint32) error { *requests++; return nil },
	})
}

type fixture struct {
	t        *testing.T
	hub      *Hub
	room     *Room
	members  map[string]*fakeMember
	requests map[string]*int
}

func newFixture(t *testing.T, settings Settings) *fixture {
	f := &fixture{t: t, hub: NewHub(settings), members: map[string]*fakeMember{}, requests: map[string]*int{}}
	t.Cleanup(func() {
		for _, m := range f.members {
			f.hub.Leave(f.room, m)
		}
		f.hub.Close()
	})
	return f
}

func (f *fixture) join(id string, publish bool) *fakeMember {
	m := newFake(id)
	r, _, err := f.hub.Join("r", m, signal.Participant{ID: id, Name: id})
	if err != nil {
		f.t.Fatal(err)
	}
	f.room, f.members[id] = r, m
	if publish {
		f.requests[id] = new(int)
		r.Publish(m, upTrack(id, webrtc.RTPCodecTypeAudio, f.requests[id]))
		r.Publish(m, upTrack(id, webrtc.RTPCodecTypeVideo, f.requests[id]))
	}
	r.settle()
	return m
}

func (f *fixture) leave(id string) {
	f.hub.Leave(f.room, f.members[id])
	delete(f.members, id)
	f.room.settle()
}

// settle runs at once what the room would do a little later: a join's or
// leave's reselect (soon.go) and the batched participants message (listing.go).
func (r *Room) settle() {
	r.do(func(s *state) {
		if !s.reselectAt.IsZero() {
			s.reselectIfDue(time.Now().Add(selectDelay))
		}
		s.flushRoster(time.Now(), true)
	})
}

func TestMembershipEventsAndSubscriptions(t *testing.T) {
	f := newFixture(t, Settings{LastN: -1, VideoPausing: true})
	a := f.join("a", true)
	b := f.join("b", true)
	if got, _ := a.entry("b"); got != `{"id":"b","name":"b","audioMuted":false,"videoMuted":false}` {
		t.Errorf("a heard %q", got)
	}
	if len(a.downs) != 2 || len(b.downs) != 2 {
		t.Fatalf("each should receive the other's audio+video: a %d, b %d", len(a.downs), len(b.downs))
	}
	f.leave("b")
	if !a.heardLeft("b") {
		t.Error("a did not hear that b left")
	}
	if len(a.downs) != 0 {
		t.Errorf("a still receives %d tracks of b", len(a.downs))
	}
}

func TestLastNSelectsAndPauses(t *testing.T) {
	f := newFixture(t, Settings{LastN: 1, VideoPausing: true})
	a, b, c := f.join("a", true), f.join("b", true), f.join("c", true)
	// L is join order a, b, c: b and c see a; a sees b; nobody sees c.
	for m, want := range map[*fakeMember][]string{a: {"b"}, b: {"a"}, c: {"a"}} {
		if got := m.selectedSources(); !slices.Equal(got, want) {
			t.Errorf("%s receives %v, want %v", m.id, got, want)
		}
	}
	if !c.paused() || a.paused() || b.paused() {
		t.Errorf("paused: a %v, b %v, c %v; want only c", a.paused(), b.paused(), c.paused())
	}
	if got, _ := c.last(signal.TypeForwarded); got != `{"ids":["a"],"lastN":1}` {
		t.Errorf("c was told %q", got)
	}

	// a pins c: c is needed again, resumes, and gets exactly one keyframe request.
	before := *f.requests["c"]
	f.room.Pin(a, "c")
	if got := a.selectedSources(); !slices.Equal(got, []string{"c"}) {
		t.Errorf("after pinning c, a receives %v", got)
	}
	if c.paused() {
		t.Errorf("c still paused after a pinned it")
	}
	if got := *f.requests["c"] - before; got != 1 {
		t.Errorf("c got %d keyframe requests, want 1", got)
	}
	// b is nobody's now.
	if !b.paused() {
		t.Errorf("b should be paused once nobody receives it")
	}
	f.room.Unpin(a, "c")
	if got := a.selectedSources(); !slices.Equal(got, []string{"b"}) {
		t.Errorf("after unpinning, a receives %v", got)
	}
}

func TestReceiverAndRoomN(t *testing.T) {
	f := newFixture(t, Settings{LastN: 2, VideoPausing: false})
	a := f.join("a", true)
	f.join("b", true)
	f.join("c", true)
	f.join("d", true)
	if got := a.selectedSources(); !slices.Equal(got, []string{"b", "c"}) {
		t.Errorf("N=2: a receives %v", got)
	}
	f.room.SetLastN(a, 1)
	if got := a.selectedSources(); !slices.Equal(got, []string{"b"}) {
		t.Errorf("a asked for 1: receives %v", got)
	}
	f.room.SetLastN(a, 5) // more than the room allows: capped at 2
	if got := a.selectedSources(); len(got) != 2 {
		t.Errorf("a asked for 5 in a room of N=2: receives %v", got)
	}
	unlimited := -1
	f.room.UpdateSettings(signal.RoomSettings{LastN: &unlimited, OnStage: []string{"d"}})
	if got := a.selectedSources(); !slices.Equal(got, []string{"b", "c", "d"}) {
		t.Errorf("room N unlimited: a receives %v", got)
	}
	one := 1
	f.room.UpdateSettings(signal.RoomSettings{LastN: &one})
	if got := a.selectedSources(); !slices.Equal(got, []string{"d"}) {
		t.Errorf("d is on stage and N=1: a receives %v", got)
	}
	if got, _ := a.last(signal.TypeRoom); got != `{"lastN":1,"onStage":["d"]}` {
		t.Errorf("room state told: %q", got)
	}
	for _, m := range f.members {
		if m.count(signal.TypePauseVideo) != 0 {
			t.Errorf("%s paused although pausing is off", m.id)
		}
	}
}

func TestResumedJoinReplacesOldSession(t *testing.T) {
	f := newFixture(t, Settings{LastN: -1, VideoPausing: true})
	old := f.join("a", true)
	b := f.join("b", false)
	diffsBefore := len(b.diffs())
	f.join("a", false) // same id: a resumed session
	if !old.replaced {
		t.Error("old session not told it was replaced")
	}
	if d := b.diffs(); len(d) != diffsBefore+1 || len(d[0].Participants) != 1 || d[0].Participants[0].ID != "a" || len(d[0].Left) != 0 {
		t.Errorf("b should see a's entry updated, not a leave: %+v", d)
	}
	if len(b.downs) != 0 {
		t.Errorf("b still receives the replaced session's %d tracks", len(b.downs))
	}
	// The replaced session's own leave is a no-op.
	f.hub.Leave(f.room, old)
	f.room.settle()
	if b.heardLeft("a") {
		t.Error("leave of a replaced session announced a departure")
	}
	f.hub.Join("r", old, signal.Participant{ID: "x"}) // keep refs balanced for cleanup
	f.members["x"] = old
	old.id = "x"
}

func TestEffectiveN(t *testing.T) {
	cases := []struct{ room, want, got int }{
		{8, -1, 8}, {8, 3, 3}, {3, 8, 3}, {-1, -1, -1}, {-1, 4, 4}, {0, 5, 0},
	}
	for _, c := range cases {
		if got := effectiveN(c.room, c.want); got != c.got {
			t.Errorf("effectiveN(%d, %d) = %d, want %d", c.room, c.want, got, c.got)
		}
	}
}

// The room loop must always have a next tick while it has members: layer
// maintenance and speaker decisions run on it.
func TestRoomAlwaysSchedulesATick(t *testing.T) {
	f := newFixture(t, DefaultSettings())
	f.join("a", true)
	f.room.do(func(s *state) {
		next := s.nextTick()
		if next.IsZero() || time.Until(next) > layersInterval {
			t.Errorf("next tick %v (in %v), want within %v", next, time.Until(next), layersInterval)
		}
	})
}

// A new dominant speaker's top encoding is asked for a keyframe after
// max(receiver RTT) − sender RTT + 10 ms.
func TestPreemptiveKeyframeTiming(t *testing.T) {
	f := newFixture(t, DefaultSettings())
	a := f.join("a", true)
	b := f.join("b", false)
	c := f.join("c", false)
	a.rtt, b.rtt, c.rtt = 30*time.Millisecond, 50*time.Millisecond, 130*time.Millisecond
	now := time.Now().Add(time.Second) // clear of the join's own request, which aggregation would merge
	f.room.do(func(s *state) {
		s.preemptKeyframe(now, "a")
		if len(s.keyframes) != 0 {
			t.Error("scheduled a preemptive keyframe for a single-encoding source")
		}
	})
	top := forward.NewUpTrack(forward.UpTrackParams{
		Source: "a", Kind: webrtc.RTPCodecTypeVideo, SSRC: 9, RID: "f", Encoding: 2,
		Codec:               webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeVP8},
		SendKeyframeRequest: func(uint32) error { *f.requests["a"]++; return nil },
	})
	f.room.Publish(a, top)
	before := *f.requests["a"]
	f.room.do(func(s *state) {
		s.preemptKeyframe(now, "a")
		if got, want := s.nextKeyframe().Sub(now), 110*time.Millisecond; got != want {
			t.Errorf("scheduled after %v, want %v", got, want)
		}
		s.sendDueKeyframes(now.Add(100 * time.Millisecond))
		if *f.requests["a"] != before {
			t.Error("sent before it was due")
		}
		s.sendDueKeyframes(now.Add(110 * time.Millisecond))
		if *f.requests["a"] != before+1 || len(s.keyframes) != 0 {
			t.Errorf("requests %d, pending %d; want one sent, none pending", *f.requests["a"]-before, len(s.keyframes))
		}
	})
}

// A sender whose higher encodings have not started yet (bandwidth ramp-up) must
// not be told to drop them: the declared RIDs count. An encoding goes off only
// after layerOffDelay unneeded, and comes back at once.
func TestLayersCountDeclaredEncodings(t *testing.T) {
	f := newFixture(t, Settings{LastN: -1, VideoPausing: true})
	pub := f.join("pub", false)
	viewer := f.join("viewer", false)
	q := encodingUp("pub", "q", nil)
	start := time.Now()
	f.room.DeclareEncodings(pub, []string{"q", "h", "f"})
	f.room.Publish(pub, q)
	f.room.SetConstraints(viewer, map[string]signal.VideoConstraint{"pub": {Width: 1280, Height: 720}})
	if got, _ := pub.last(signal.TypeLayers); got != `{"active":["q","h","f"]}` {
		t.Errorf("right after publishing: %q, want every declared encoding on", got)
	}
	at := func(d time.Duration) string {
		f.room.do(func(s *state) { s.maintainLayers(start.Add(d)) })
		got, _ := pub.last(signal.TypeLayers)
		return got
	}
	if got := at(layerOffDelay + time.Second); got != `{"active":["f"]}` {
		t.Errorf("later: %q, want only f, which the viewer's stage needs although it has not arrived", got)
	}
	f.room.SetConstraints(viewer, map[string]signal.VideoConstraint{"pub": {Width: 320, Height: 180}})
	if got := at(layerOffDelay + 2*time.Second); got != `{"active":["q","f"]}` {
		t.Errorf("viewer shows it small: %q, want q on at once and f kept for a while", got)
	}
	if got := at(2*layerOffDelay + 2*time.Second); got != `{"active":["q"]}` {
		t.Errorf("long after: %q, want only q", got)
	}
}
