package server

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/podium-sfu/podium/internal/config"
)

// keepAlive is an HTTP/1.1 connection from a chosen local address that made one
// request and now sits idle.
type keepAlive struct {
	conn net.Conn
	r    *bufio.Reader
}

func dialFrom(t *testing.T, srv *Server, local string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", strings.TrimSuffix(strings.TrimPrefix(srv.URL(), "http://"), "/"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// get sends GET path on the connection; it reports whether an answer came.
func (k *keepAlive) get(path string) (int, error) {
	_ = k.conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.WriteString(k.conn, "GET "+path+" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"); err != nil {
		return 0, err
	}
	resp, err := http.ReadResponse(k.r, nil)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

// closedWithin reports whether the server closes the connection within d.
func (k *keepAlive) closedWithin(d time.Duration) bool {
	_ = k.conn.SetReadDeadline(time.Now().Add(d))
	_, err := k.r.ReadByte()
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

func openKeepAlive(t *testing.T, srv *Server, local string) *keepAlive {
	t.Helper()
	c := dialFrom(t, srv, local)
	return &keepAlive{conn: c, r: bufio.NewReader(c)}
}

// TestIdleKeepAlivesCappedAndClosed (issue 17, item 2): one address holds at
// most max-conns-per-ip connections, further ones are closed at once; idle
// keep-alives are closed after http-idle-timeout; another address is served
// meanwhile.
func TestIdleKeepAlivesCappedAndClosed(t *testing.T) {
	const maxConns, idle = 8, 700 * time.Millisecond
	srv := startServerWith(t, Options{}, func(c *config.Config) { c.MaxConnsPerIP, c.HTTPIdleTimeout = maxConns, idle })
	var held []*keepAlive
	for range maxConns {
		k := openKeepAlive(t, srv, "127.0.0.1")
		if code, err := k.get("/healthz"); err != nil || code != 200 {
			t.Fatalf("connection %d within the cap: %d %v", len(held), code, err)
		}
		held = append(held, k)
	}
	extra := openKeepAlive(t, srv, "127.0.0.1")
	if code, err := extra.get("/healthz"); err == nil {
		t.Errorf("connection %d from one address answered %d", maxConns+1, code)
	}
	other := openKeepAlive(t, srv, "127.0.0.2") // all of 127/8 is loopback on Linux
	if code, err := other.get("/healthz"); err != nil || code != 200 {
		t.Fatalf("/healthz from another address while one is at its cap: %d %v", code, err)
	}
	for i, k := range held {
		if !k.closedWithin(idle + 3*time.Second) {
			t.Fatalf("idle keep-alive %d still open %v after the idle timeout", i, idle+3*time.Second)
		}
	}
	// Their slots are free again.
	again := openKeepAlive(t, srv, "127.0.0.1")
	waitUntilOK := time.Now().Add(5 * time.Second)
	for {
		code, err := again.get("/healthz")
		if err == nil && code == 200 {
			break
		}
		if time.Now().After(waitUntilOK) {
			t.Fatalf("no connection from the first address after its idle ones closed: %d %v", code, err)
		}
		again = openKeepAlive(t, srv, "127.0.0.1") // the close may still be on its way
	}
}

// TestWebSocketOutlivesHTTPTimeouts: the read, write and idle timeouts meant
// for plain requests do not end a signaling WebSocket.
func TestWebSocketOutlivesHTTPTimeouts(t *testing.T) {
	const short = 300 * time.Millisecond
	srv := startServerWith(t, Options{HTTPReadTimeout: short, HTTPWriteTimeout: short}, func(c *config.Config) { c.HTTPIdleTimeout = short })
	rc := dialRaw(t, srv)
	rc.join("main", "Long")
	for i := range 4 {
		timer := time.NewTimer(2 * short)
		<-timer.C
		rc.expectPong(i + 1)
	}
}

// TestConnCapDisabled: max-conns-per-ip 0 lifts the cap.
func TestConnCapDisabled(t *testing.T) {
	srv := startServerWith(t, Options{}, func(c *config.Config) { c.MaxConnsPerIP = 0 })
	for i := range 70 { // above the default cap
		if code, err := openKeepAlive(t, srv, "127.0.0.1").get("/healthz"); err != nil || code != 200 {
			t.Fatalf("connection %d: %d %v", i, code, err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, wsURL(srv), nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.CloseNow()
}
