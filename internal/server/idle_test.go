package server

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/podium-sfu/podium/internal/config"
	"github.com/podium-sfu/podium/internal/signal"
)

// waitBye waits for the server's bye and returns its code.
func (rc *rawConn) waitBye() string {
	rc.t.Helper()
	return rc.waitFor("bye", func(m serverMsg) bool { return m.Type == signal.TypeBye }).Code
}

// TestSilentJoinRemoved (issue 17, item 4): a joined participant that never
// negotiates media and says nothing is removed after media-timeout with a bye
// (idle); one that only pings, and one with media, stay.
func TestSilentJoinRemoved(t *testing.T) {
	const timeout = time.Second
	srv := startServerWith(t, Options{}, func(c *config.Config) { c.MediaTimeout = timeout })
	media := dial(t, srv, "main", "Media", true)
	silent, pinger := dialRaw(t, srv), dialRaw(t, srv)
	silent.join("main", "Silent")
	pinger.join("main", "Pinger")
	joined := time.Now()
	for i := 1; time.Since(joined) < 3*timeout; i++ {
		timer := time.NewTimer(timeout / 4)
		<-timer.C
		pinger.expectPong(i)
	}
	if code := silent.waitBye(); code != signal.ByeIdle {
		t.Errorf("bye code %q, want %q", code, signal.ByeIdle)
	}
	silent.expectClose(websocket.StatusNormalClosure)
	r, ok := srv.Hub().Room("main")
	if !ok {
		t.Fatal("the room ended")
	}
	var names []string
	for _, p := range r.Participants() {
		names = append(names, p.Name)
	}
	if strings.Join(names, ",") != "Media,Pinger" && strings.Join(names, ",") != "Pinger,Media" {
		t.Errorf("participants after the timeout: %v, want Media and Pinger", names)
	}
	if st := media.Snapshot(); st.Closed != nil {
		t.Errorf("the participant with media was removed: %v", st.Closed)
	}
}

// TestSilentJoinsDoNotLockOutOthers reproduces the probe: with max-rooms 20,
// 20 silent joins from one address took every room for good. Now their rooms
// are freed after media-timeout.
func TestSilentJoinsDoNotLockOutOthers(t *testing.T) {
	srv := startServerWith(t, Options{}, func(c *config.Config) {
		c.MaxRooms, c.RoomsPerIP, c.MediaTimeout = 20, 0, time.Second
	})
	var silent []*rawConn
	for i := range 20 {
		rc := dialRaw(t, srv)
		rc.join(fmt.Sprint("squat", i), "S")
		silent = append(silent, rc)
	}
	full := dialRaw(t, srv)
	full.joinFrame("mine", "Other", "")
	full.expectError(signal.CodeServerFull, true)
	for _, rc := range silent {
		if code := rc.waitBye(); code != signal.ByeIdle {
			t.Fatalf("bye %q", code)
		}
	}
	waitUntil(t, "the squatted rooms to end", 5*time.Second, func() bool { return len(srv.Hub().Rooms()) == 0 })
	dialRaw(t, srv).join("mine", "Other")
}

// dialRawFromAddress dials the signaling WebSocket from a local address of 127/8.
func dialRawFromAddress(t *testing.T, srv *Server, local string) *rawConn {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	return dialRawWith(t, srv, &websocket.DialOptions{HTTPClient: &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}})
}

// TestRoomsPerIP: one address opens at most rooms-per-ip live rooms and is then
// refused with too-many-rooms; it may still join others' rooms, and another
// address may open rooms.
func TestRoomsPerIP(t *testing.T) {
	srv := startServerWith(t, Options{}, func(c *config.Config) { c.RoomsPerIP = 3 })
	for i := range 3 {
		dialRaw(t, srv).join(fmt.Sprint("r", i), "A")
	}
	rc := dialRaw(t, srv)
	rc.joinFrame("r3", "A", "")
	m := rc.waitFor("too-many-rooms", isError(signal.CodeTooManyRooms))
	if !m.Fatal || !strings.Contains(m.Message, "(3)") {
		t.Errorf("too-many-rooms: %s", m.raw)
	}
	rc.expectClose(websocket.StatusPolicyViolation)
	dialRaw(t, srv).join("r0", "A2") // a room it opened
	b := dialRawFromAddress(t, srv, "127.0.0.2")
	b.join("b0", "B")
	dialRaw(t, srv).join("b0", "A3") // another address's room
}
