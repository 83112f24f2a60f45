package room

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/podium-sfu/podium/internal/signal"
)

func TestDecideP2P(t *testing.T) {
	t0 := time.Unix(1000, 0)
	cases := []struct {
		name  string
		in    p2pInput
		now   time.Time
		on    bool
		again time.Time
	}{
		{"two, held long enough", p2pInput{2, true, t0, false, false}, t0.Add(P2PHold), true, time.Time{}},
		{"two, size changed 4.9 s ago", p2pInput{2, true, t0, false, false}, t0.Add(P2PHold - 100*time.Millisecond), false, t0.Add(P2PHold)},
		{"two, just changed", p2pInput{2, true, t0, false, false}, t0, false, t0.Add(P2PHold)},
		{"one", p2pInput{1, true, t0, false, false}, t0.Add(time.Hour), false, time.Time{}},
		{"three", p2pInput{3, true, t0, false, false}, t0.Add(time.Hour), false, time.Time{}},
		{"policy forbids", p2pInput{2, false, t0, false, false}, t0.Add(time.Hour), false, time.Time{}},
		{"in P2P mode: no hold to stay", p2pInput{2, true, t0, false, true}, t0, true, time.Time{}},
		{"in P2P mode, a third joined", p2pInput{3, true, t0, false, true}, t0, false, time.Time{}},
		{"failed since the size changed", p2pInput{2, true, t0, true, false}, t0.Add(time.Hour), false, time.Time{}},
	}
	for _, c := range cases {
		on, again := decideP2P(c.in, c.now)
		if on != c.on || !again.Equal(c.again) {
			t.Errorf("%s: decideP2P = %v, %v; want %v, %v", c.name, on, again, c.on, c.again)
		}
	}
}

// p2pAt runs the room's decision at now (the loop would at its next tick).
func (f *fixture) p2pAt(now time.Time) {
	f.room.do(func(s *state) { s.reselect(now) })
}

func (f *fixture) p2pEpoch() (epoch uint64, on bool) {
	f.room.do(func(s *state) { epoch, on = s.p2p.epoch, s.p2p.on })
	return
}

// bypassed lists the sources (kind/source) the SFU does not forward to m.
func (f *fakeMember) bypassed() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for d := range f.downs {
		if d.Bypassed() {
			out = append(out, d.Kind().String()+"/"+d.Up().Source())
		}
	}
	return out
}

// Two participants alone for P2PHold are told to connect directly, the lower
// id initiating; only after a client reports its direct connection up does
// the SFU stop forwarding to it (audio and video) and pause the other's video;
// a third participant ends the mode at once, forwarding resumes, and the mode
// returns only P2PHold after the third leaves.
func TestP2PModeFollowsRoomSize(t *testing.T) {
	f := newFixture(t, Settings{LastN: -1, VideoPausing: true})
	a := f.join("a", true)
	b := f.join("b", true)
	start := time.Now()
	f.p2pAt(start.Add(P2PHold / 2))
	if n := a.count(signal.TypeP2P); n != 0 {
		t.Fatalf("p2p told %d times before the hold ended", n)
	}
	f.p2pAt(start.Add(P2PHold + time.Millisecond))
	epoch, on := f.p2pEpoch()
	if !on {
		t.Fatal("two participants after the hold: not in P2P mode")
	}
	if got, _ := a.last(signal.TypeP2P); got != `{"on":true,"epoch":1,"peer":"b","initiator":true}` {
		t.Errorf("a was told %s", got)
	}
	if got, _ := b.last(signal.TypeP2P); got != `{"on":true,"epoch":1,"peer":"a"}` {
		t.Errorf("b was told %s", got)
	}
	if got := a.bypassed(); len(got) != 0 {
		t.Errorf("bypassed %v before any client reported its direct connection", got)
	}

	// b's direct connection is up: b gets nothing of a from the SFU, and a,
	// whose video nobody else needs, is paused; a still gets b through the SFU.
	f.room.SetP2PState(b, signal.P2PState{Epoch: epoch, State: signal.P2PConnected})
	if got := strings.Join(b.bypassed(), ","); got != "audio/a,video/a" && got != "video/a,audio/a" {
		t.Errorf("b bypasses %q, want audio/a and video/a", got)
	}
	if len(a.bypassed()) != 0 || !a.paused() || b.paused() {
		t.Errorf("a bypasses %v, a paused %v, b paused %v; want nothing, true, false", a.bypassed(), a.paused(), b.paused())
	}
	f.room.SetP2PState(a, signal.P2PState{Epoch: epoch, State: signal.P2PConnected})
	if len(a.bypassed()) != 2 || !b.paused() {
		t.Errorf("both direct: a bypasses %v, b paused %v", a.bypassed(), b.paused())
	}
	if st, _ := f.room.Stats(time.Now()); !st.P2PMode || st.P2PDirect != 2 || st.Forwarding["video"] != 0 || st.Forwarding["audio"] != 0 {
		t.Errorf("stats: mode %v, direct %d, forwarding %v; want true, 2, none", st.P2PMode, st.P2PDirect, st.Forwarding)
	}
	// A stale report (an old epoch) changes nothing.
	f.room.SetP2PState(a, signal.P2PState{Epoch: epoch - 1, State: signal.P2PFailed})
	if _, on := f.p2pEpoch(); !on {
		t.Fatal("a report of another epoch ended P2P mode")
	}

	// A third participant: back to the SFU at once, for everyone.
	c := f.join("c", true)
	if _, on := f.p2pEpoch(); on {
		t.Fatal("three participants: still in P2P mode")
	}
	if got, _ := a.last(signal.TypeP2P); got != `{"on":false,"epoch":1,"reason":"size"}` {
		t.Errorf("a was told %s", got)
	}
	if len(a.bypassed())+len(b.bypassed()) != 0 || a.paused() || b.paused() {
		t.Errorf("after the third joined: bypassed %v %v, paused %v %v", a.bypassed(), b.bypassed(), a.paused(), b.paused())
	}
	if c.count(signal.TypeP2P) != 0 {
		t.Error("the third participant was told about P2P")
	}

	// c leaves: two again, but P2P only P2PHold later.
	f.leave("c")
	left := time.Now()
	f.p2pAt(left.Add(P2PHold - 10*time.Millisecond))
	if _, on := f.p2pEpoch(); on {
		t.Fatal("P2P resumed before the hold after the third left")
	}
	f.p2pAt(left.Add(P2PHold + 10*time.Millisecond))
	if epoch, on := f.p2pEpoch(); !on || epoch != 2 {
		t.Fatalf("after the hold: on %v epoch %d; want true, 2", on, epoch)
	}
	var totals Totals
	f.room.do(func(s *state) { totals = s.retired })
	if totals.P2P.ToP2P != 2 || totals.P2P.ToSFU != 1 {
		t.Errorf("switches %+v, want 2 to P2P and 1 to the SFU", totals.P2P)
	}
}

// A failed direct connection sends both back to the SFU, counts a failure,
// and P2P is not tried again until the room's size changes.
func TestP2PFailureStaysOnSFU(t *testing.T) {
	f := newFixture(t, Settings{LastN: -1, VideoPausing: true})
	a := f.join("a", true)
	b := f.join("b", true)
	f.p2pAt(time.Now().Add(P2PHold + time.Millisecond))
	epoch, _ := f.p2pEpoch()
	f.room.SetP2PState(a, signal.P2PState{Epoch: epoch, State: signal.P2PConnected})
	f.room.SetP2PState(b, signal.P2PState{Epoch: epoch, State: signal.P2PFailed})
	if got, _ := b.last(signal.TypeP2P); got != `{"on":false,"epoch":1,"reason":"failed"}` {
		t.Errorf("b was told %s", got)
	}
	if len(a.bypassed()) != 0 {
		t.Errorf("a still bypasses %v after the failure", a.bypassed())
	}
	f.p2pAt(time.Now().Add(time.Hour))
	if _, on := f.p2pEpoch(); on {
		t.Fatal("P2P tried again after a failure without a change of size")
	}
	var totals Totals
	f.room.do(func(s *state) { totals = s.retired })
	if totals.P2P.Failures != 1 {
		t.Errorf("failures %d, want 1", totals.P2P.Failures)
	}
}

// The policy: the room setting (off and on again), and a screen share, which
// P2P media does not carry, keep two participants on the SFU.
func TestP2PPolicy(t *testing.T) {
	f := newFixture(t, Settings{LastN: -1, VideoPausing: true})
	a := f.join("a", true)
	f.join("b", true)
	later := time.Now().Add(time.Hour)
	off, on := false, true
	f.room.UpdateSettings(signal.RoomSettings{P2P: &off})
	if got, _ := a.last(signal.TypeRoom); !strings.Contains(got, `"p2pOff":true`) {
		t.Errorf("room message %s does not say p2pOff", got)
	}
	f.p2pAt(later)
	if _, on := f.p2pEpoch(); on {
		t.Fatal("room setting off: P2P mode")
	}
	f.room.UpdateSettings(signal.RoomSettings{P2P: &on})
	f.p2pAt(later)
	if _, on := f.p2pEpoch(); !on {
		t.Fatal("room setting on again: no P2P mode")
	}
	f.share("a")
	if _, on := f.p2pEpoch(); on {
		t.Fatal("a screen share: still P2P mode")
	}
	if got, _ := a.last(signal.TypeP2P); got != `{"on":false,"epoch":1,"reason":"policy"}` {
		t.Errorf("a was told %s", got)
	}
}

// The relay carries a direct connection's signaling only between the two
// members of the pair, in the current epoch, at a bounded rate: not to a
// member outside the pair, nor to a participant of another room, nor from a
// member outside the pair.
func TestP2PRelayScope(t *testing.T) {
	f := newFixture(t, Settings{LastN: -1})
	a := f.join("a", false)
	b := f.join("b", false)
	f.p2pAt(time.Now().Add(P2PHold + time.Millisecond))
	epoch, _ := f.p2pEpoch()

	offer := signal.P2PSignal{To: "b", Epoch: epoch, SDP: "v=0 offer"}
	if err := f.room.RelayP2P(a, signal.TypeP2POffer, offer); err != nil {
		t.Fatalf("a → b: %v", err)
	}
	if got, _ := b.last(signal.TypeP2POffer); got != `{"from":"a","epoch":1,"sdp":"v=0 offer"}` {
		t.Errorf("b got %s", got)
	}
	// A participant of another room, by its id.
	other := newFake("x")
	ro, _, err := f.hub.Join("other", other, signal.Participant{ID: "x"})
	if err != nil {
		t.Fatal(err)
	}
	defer f.hub.Leave(ro, other)
	for _, c := range []struct {
		name string
		msg  signal.P2PSignal
	}{
		{"to a participant of another room", signal.P2PSignal{To: "x", Epoch: epoch, SDP: "v=0"}},
		{"to itself", signal.P2PSignal{To: "a", Epoch: epoch, SDP: "v=0"}},
		{"in an old epoch", signal.P2PSignal{To: "b", Epoch: epoch - 1, SDP: "v=0"}},
	} {
		if err := f.room.RelayP2P(a, signal.TypeP2POffer, c.msg); !errors.Is(err, ErrP2PNotPeer) {
			t.Errorf("%s: %v, want ErrP2PNotPeer", c.name, err)
		}
	}
	if other.count(signal.TypeP2POffer) != 0 {
		t.Error("the other room's participant got a relayed offer")
	}
	// A third member ends the mode: nobody may relay, to or from it.
	c := f.join("c", false)
	if err := f.room.RelayP2P(c, signal.TypeP2PCandidate, signal.P2PSignal{To: "a", Epoch: epoch}); !errors.Is(err, ErrP2PNotPeer) {
		t.Errorf("c → a: %v, want ErrP2PNotPeer", err)
	}
	if err := f.room.RelayP2P(a, signal.TypeP2PCandidate, signal.P2PSignal{To: "b", Epoch: epoch}); !errors.Is(err, ErrP2PNotPeer) {
		t.Errorf("a → b with three in the room: %v, want ErrP2PNotPeer", err)
	}
	if n := a.count(signal.TypeP2PCandidate) + b.count(signal.TypeP2PCandidate); n != 0 {
		t.Errorf("%d candidates relayed after P2P mode ended", n)
	}
}

// The relay rate: P2PBurst messages at once, then refused until the bucket refills.
func TestP2PRelayRate(t *testing.T) {
	f := newFixture(t, Settings{LastN: -1})
	f.join("a", false)
	b := f.join("b", false)
	now := time.Now().Add(P2PHold + time.Millisecond)
	f.p2pAt(now)
	var errs []error
	f.room.do(func(s *state) {
		from := s.members["a"]
		for range P2PBurst + 1 {
			errs = append(errs, s.relayP2P(now, from, signal.TypeP2PCandidate, signal.P2PSignal{To: "b", Epoch: s.p2p.epoch}))
		}
		errs = append(errs, s.relayP2P(now.Add(time.Second/P2PRate), from, signal.TypeP2PCandidate, signal.P2PSignal{To: "b", Epoch: s.p2p.epoch}))
	})
	for i, err := range errs[:P2PBurst] {
		if err != nil {
			t.Fatalf("message %d of the burst: %v", i, err)
		}
	}
	if !errors.Is(errs[P2PBurst], ErrP2PRate) {
		t.Errorf("message %d: %v, want ErrP2PRate", P2PBurst+1, errs[P2PBurst])
	}
	if errs[P2PBurst+1] != nil {
		t.Errorf("after 1/P2PRate s: %v, want relayed", errs[P2PBurst+1])
	}
	if n := b.count(signal.TypeP2PCandidate); n != P2PBurst+1 {
		t.Errorf("b got %d candidates, want %d", n, P2PBurst+1)
	}
}
