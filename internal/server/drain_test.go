package server

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/podium-sfu/podium/internal/client"
	"github.com/podium-sfu/podium/internal/signal"
)

func readyz(t *testing.T, srv *Server) (int, string) {
	t.Helper()
	resp, err := http.Get(srv.URL() + "readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestDrainTimeout: while draining, /readyz is 503 "draining", everyone is told,
// the call goes on, new joins are refused (a resume into the live room is not);
// at the timeout the remaining participants get a bye and are disconnected.
func TestDrainTimeout(t *testing.T) {
	srv := startServer(t, Options{})
	pair := publishingPair(t, srv, "main")
	if code, body := readyz(t, srv); code != 200 || body != "ready\n" {
		t.Fatalf("/readyz before draining: %d %q", code, body)
	}
	const timeout = 3 * time.Second
	drained := make(chan time.Duration, 1)
	start := time.Now()
	go func() { srv.Drain(context.Background(), timeout); drained <- time.Since(start) }()

	for _, c := range pair {
		waitFor(t, c, "the draining notice", 5*time.Second, func(s *client.State) bool { return s.Draining != nil })
	}
	if d := pair[0].Snapshot().Draining; d.Seconds != 3 || d.Deadline == "" {
		t.Errorf("notice %+v", d)
	}
	if code, body := readyz(t, srv); code != http.StatusServiceUnavailable || body != "draining\n" {
		t.Errorf("/readyz while draining: %d %q", code, body)
	}
	// New joins are refused...
	rc := dialRaw(t, srv)
	rc.joinFrame("main", "Late", "")
	if m := rc.waitFor("draining error", isError(signal.CodeDraining)); !m.Fatal {
		t.Errorf("draining error not fatal: %s", m.raw)
	}
	rc2 := dialRaw(t, srv)
	rc2.joinFrame("fresh", "New", "")
	rc2.waitFor("draining error", isError(signal.CodeDraining))
	// ... but a participant reconnecting keeps its place (and is told too).
	back := redial(t, srv, "main", "A again", pair[0].Snapshot().Resume)
	waitFor(t, back, "the draining notice after resuming", 5*time.Second, func(s *client.State) bool { return s.Draining != nil })
	// The call carries on meanwhile.
	waitFor(t, pair[1], "still receiving while draining", 5*time.Second, func(s *client.State) bool {
		tr := s.Tracks["video-"+pair[0].Snapshot().ID]
		return tr != nil && time.Since(tr.LastSeen) < 300*time.Millisecond
	})

	took := <-drained
	if took < timeout || took > timeout+3*time.Second {
		t.Errorf("Drain returned after %v with a %v timeout", took, timeout)
	}
	for _, c := range []*client.Client{pair[1], back} {
		waitFor(t, c, "bye and close", 5*time.Second, func(s *client.State) bool { return s.Bye != "" && s.Closed != nil })
		if st := c.Snapshot(); !strings.Contains(st.Bye, "shutting down") {
			t.Errorf("bye %q", st.Bye)
		}
	}
	waitUntil(t, "every room to end", 5*time.Second, func() bool { return len(srv.Hub().Rooms()) == 0 })
}

// TestDrainEndsEarlyWhenEveryoneLeft: Drain returns as soon as the last
// participant has gone, long before the timeout.
func TestDrainEndsEarlyWhenEveryoneLeft(t *testing.T) {
	srv := startServer(t, Options{})
	a := dial(t, srv, "main", "A", false)
	b := dial(t, srv, "main", "B", false)
	drained := make(chan struct{})
	go func() { srv.Drain(context.Background(), time.Minute); close(drained) }()
	waitFor(t, a, "the draining notice", 5*time.Second, func(s *client.State) bool { return s.Draining != nil })
	a.Leave()
	select {
	case <-drained:
		t.Fatal("drain ended while B was still there")
	case <-time.After(300 * time.Millisecond):
	}
	b.Leave()
	select {
	case <-drained:
	case <-time.After(5 * time.Second):
		t.Fatal("drain did not end when everyone had left")
	}
	if !srv.Draining() {
		t.Error("not draining")
	}
}
