package server

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/podium-sfu/podium/internal/client"
	"github.com/podium-sfu/podium/internal/config"
	"github.com/podium-sfu/podium/internal/signal"
)

// Each limit, when reached, gets its own clear error code (docs/protocol.md).

func TestLimitParticipantsPerRoom(t *testing.T) {
	srv := startServerWith(t, Options{}, func(c *config.Config) { c.MaxParticipants = 2 })
	a, b := dialRaw(t, srv), dialRaw(t, srv)
	a.join("small", "A")
	b.join("small", "B")
	c := dialRaw(t, srv)
	c.joinFrame("small", "C", "")
	m := c.waitFor("room-full", isError(signal.CodeRoomFull))
	if !m.Fatal || !strings.Contains(m.Message, "at most 2") {
		t.Errorf("room-full: %s", m.raw)
	}
	c.expectClose(websocket.StatusPolicyViolation)
	// Another room is not full; and once someone leaves there is room again.
	dialRaw(t, srv).join("other", "C")
	b.close()
	waitUntil(t, "B to leave", 5*time.Second, func() bool {
		r, ok := srv.Hub().Room("small")
		return ok && len(r.Participants()) == 1
	})
	dialRaw(t, srv).join("small", "D")
}

func TestLimitRoomsPerServer(t *testing.T) {
	srv := startServerWith(t, Options{}, func(c *config.Config) { c.MaxRooms = 1 })
	a := dialRaw(t, srv)
	a.join("first", "A")
	dialRaw(t, srv).join("first", "B") // joining a live room is fine
	c := dialRaw(t, srv)
	c.joinFrame("second", "C", "")
	if m := c.waitFor("server-full", isError(signal.CodeServerFull)); !m.Fatal {
		t.Errorf("server-full not fatal: %s", m.raw)
	}
	c.expectClose(websocket.StatusPolicyViolation)
}

func TestLimitJoinsPerIP(t *testing.T) {
	srv := startServerWith(t, Options{}, func(c *config.Config) { c.JoinsPerIP = 3 })
	for i := range 3 {
		rc := dialRaw(t, srv)
		rc.join("main", fmt.Sprint("P", i))
		rc.close()
	}
	rc := dialRaw(t, srv)
	rc.joinFrame("main", "P3", "")
	m := rc.waitFor("too-many-joins", isError(signal.CodeTooManyJoins))
	if !m.Fatal {
		t.Errorf("too-many-joins not fatal: %s", m.raw)
	}
	rc.expectClose(websocket.StatusPolicyViolation)
}

func TestLimitSignalingRate(t *testing.T) {
	srv := startServerWith(t, Options{}, func(c *config.Config) { c.SignalingRate, c.SignalingBurst = 5, 5 })
	rc := dialRaw(t, srv)
	rc.join("main", "Chatty") // one token
	rc.expectPong(1)          // two
	// A flood: the first dropped message is answered with a non-fatal error, and
	// sending on regardless closes the connection.
	for i := range 50 {
		rc.sendMaybe(fmt.Appendf(nil, `{"type":"ping","ts":%d}`, 100+i))
	}
	warned, closedWith := false, ""
	timeout := time.After(10 * time.Second)
	for closedWith == "" {
		select {
		case m, open := <-rc.msgs:
			if !open {
				closedWith = fmt.Sprint(websocket.CloseStatus(rc.err))
				break
			}
			if m.Type == signal.TypeError && m.Code == signal.CodeRateLimited {
				if !m.Fatal {
					warned = true
				} else if !warned {
					t.Errorf("fatal rate-limited before a warning")
				}
			}
		case <-timeout:
			t.Fatal("connection not closed")
		}
	}
	if !warned || closedWith != fmt.Sprint(websocket.StatusPolicyViolation) {
		t.Errorf("warned %v, closed with %s", warned, closedWith)
	}
}

func TestLimitTracksPerParticipant(t *testing.T) {
	srv := startServerWith(t, Options{}, func(c *config.Config) { c.MaxTracks = 1 })
	watcher := dial(t, srv, "main", "Watcher", false)
	pub := dial(t, srv, "main", "TwoTracks", true) // audio and video: one too many
	waitFor(t, pub, "too-many-tracks", 10*time.Second, func(s *client.State) bool {
		for _, e := range s.Errors {
			if e.Code == signal.CodeTooManyTracks && !e.Fatal && strings.Contains(e.Message, "at most 1") {
				return true
			}
		}
		return false
	})
	time.Sleep(500 * time.Millisecond)
	if st := watcher.Snapshot(); len(st.Tracks) != 0 {
		t.Errorf("tracks of a refused offer were forwarded: %v", keys(st.Tracks))
	}
}

func TestLimitMessageSize(t *testing.T) {
	small := startServerWith(t, Options{}, func(c *config.Config) { c.MaxMessageBytes = 8 << 10 })
	rc := dialRaw(t, small)
	rc.join("main", "A")
	rc.send(fmt.Appendf(nil, `{"type":"ping","ts":1,"pad":"%s"}`, strings.Repeat("x", 9<<10)))
	m := rc.waitFor("too-large", isError(signal.CodeTooLarge))
	if !m.Fatal || !strings.Contains(m.Message, "8192") {
		t.Errorf("too-large: %s", m.raw)
	}
	rc.expectClose(websocket.StatusPolicyViolation)

	// A larger limit takes messages the default would refuse.
	large := startServerWith(t, Options{}, func(c *config.Config) { c.MaxMessageBytes = 256 << 10 })
	rc = dialRaw(t, large)
	rc.join("main", "B")
	rc.send(fmt.Appendf(nil, `{"type":"ping","ts":2,"pad":"%s"}`, strings.Repeat("x", 100<<10)))
	rc.waitFor("pong", func(m serverMsg) bool { return m.Type == signal.TypePong })
}
