package server

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/podium-sfu/podium/internal/client"
	"github.com/podium-sfu/podium/internal/signal"
)

// TestFailoverHintsAndDrain: a cluster's welcome names the bridge and the
// other nodes to fail over to, its region's first, each with ?lost= naming
// the bridge; a join carrying ?lost= is never sent back to that bridge (the
// registry still takes it for healthy for a TTL after it dies); and a
// draining bridge redirects its participants to another bridge, so the drain
// ends as soon as they follow, long before its timeout; the room opens at
// the new bridge with the settings the directory holds.
func TestFailoverHintsAndDrain(t *testing.T) {
	nodes := startClusterOf(t, "us", "us", "eu")
	awaitRegistries(t, 10*time.Second, nodes...)
	byID := map[string]*Server{}
	for _, s := range nodes {
		byID[s.Node().ID()] = s
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ann, err := client.Join(ctx, client.Options{Room: "fo", Name: "Ann", Publish: true}, wsURL(nodes[0]))
	if err != nil {
		t.Fatal(err)
	}
	defer ann.Close()
	st := ann.Snapshot()
	bridge := byID[st.Node]
	if bridge == nil || bridge.Node().Region() != "us" {
		t.Fatalf("Ann's welcome names node %q, want a us node", st.Node)
	}
	otherUS := nodes[0]
	if bridge == nodes[0] {
		otherUS = nodes[1]
	}
	host := func(s *Server) string { return strings.TrimSuffix(strings.TrimPrefix(s.URL(), "http://"), "/") }
	if len(st.Fallbacks) != 2 {
		t.Fatalf("fallbacks %v, want the two other nodes", st.Fallbacks)
	}
	for i, want := range []*Server{otherUS, nodes[2]} {
		u, err := url.Parse(st.Fallbacks[i])
		if err != nil || u.Scheme != "ws" || u.Host != host(want) || u.Path != "/ws" || u.Query().Get("lost") != st.Node || u.Query().Get("region") != "us" {
			t.Errorf("fallback %d: %s, want ws://%s/ws?lost=%s&region=us", i, st.Fallbacks[i], host(want), st.Node)
		}
	}
	within(t, 5*time.Second, "the directory shows fo on Ann's bridge at the other us node", func() bool {
		b := otherUS.Node().Bridges("fo", time.Now())
		return len(b) == 1 && b[0].Node == st.Node
	})

	// Without the hint the other us node sends a us participant to the
	// conference's bridge; with ?lost= naming it, it serves her itself.
	typ, frame := joinProbe(t, wsURL(otherUS), "fo", "probe")
	var rd signal.Redirect
	if err := json.Unmarshal(frame, &rd); typ != signal.TypeRedirect || err != nil || rd.Node != st.Node {
		t.Fatalf("a us join at the other us node: %s %s, want a redirect to %s", typ, frame, st.Node)
	}
	if typ, frame := joinProbe(t, st.Fallbacks[0], "fo", "probe"); typ != signal.TypeWelcome {
		t.Fatalf("a join naming the lost bridge: %s %s, want a welcome", typ, frame)
	}

	// Last N 2 set at the bridge reaches the directory.
	rm, ok := bridge.Hub().Room("fo")
	if !ok {
		t.Fatal("the bridge has no room fo")
	}
	two := 2
	rm.UpdateSettings(signal.RoomSettings{LastN: &two})
	within(t, 5*time.Second, "the other us node's directory has fo with Last N 2", func() bool {
		b := otherUS.Node().Bridges("fo", time.Now())
		return len(b) == 1 && b[0].LastN == 2
	})

	// The bridge drains: Ann is sent to the other us node, follows, and the
	// drain ends when her old session does. The room opens there with the
	// settings of the directory (Last N 2, not the default 8).
	drained := make(chan time.Duration, 1)
	go func() {
		start := time.Now()
		bridge.Drain(context.Background(), 15*time.Second)
		drained <- time.Since(start)
	}()
	waitFor(t, ann, "a redirect from the draining bridge", 5*time.Second, func(s *client.State) bool { return s.Redirect != nil })
	rd = *ann.Snapshot().Redirect
	if rd.Node != otherUS.Node().ID() || rd.Region != "us" {
		t.Fatalf("drain redirect %+v, want %s, the other us node", rd, otherUS.Node().ID())
	}
	// A join reaching the draining bridge meanwhile is sent on, not refused.
	if typ, frame := joinProbe(t, bridgeWSURLFor(t, bridge), "fo", "late"); typ != signal.TypeRedirect || !strings.Contains(string(frame), otherUS.Node().ID()) {
		t.Errorf("a join at the draining bridge: %s %s, want a redirect to %s", typ, frame, otherUS.Node().ID())
	}
	ann2, err := client.Join(ctx, client.Options{Room: "fo", Name: "Ann", Publish: true, Resume: &st.Resume}, rd.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer ann2.Close()
	ann.Close()
	select {
	case d := <-drained:
		t.Logf("drain ended %v after it began", d.Round(time.Millisecond))
	case <-time.After(5 * time.Second):
		t.Fatal("the drain did not end within 5 s of the participant leaving (timeout 15 s)")
	}
	if got := ann2.Snapshot().Node; got != otherUS.Node().ID() {
		t.Errorf("Ann rejoined at %q, want %s", got, otherUS.Node().ID())
	}
	if rm, ok := otherUS.Hub().Room("fo"); !ok {
		t.Error("the other us node does not serve fo")
	} else if n := rm.Settings().LastN; n != 2 {
		t.Errorf("fo at the other us node has Last N %d, want 2 from the directory", n)
	}
}

// bridgeWSURLFor is s's signaling URL naming s as the bridge (as a redirect's).
func bridgeWSURLFor(t *testing.T, s *Server) string {
	t.Helper()
	u, err := bridgeWSURL(s.URL(), "us", s.Node().ID())
	if err != nil {
		t.Fatal(err)
	}
	return u
}
