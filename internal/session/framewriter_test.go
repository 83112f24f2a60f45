package session

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// wsPair is a server-side WebSocket (what a session writes to) and the
// client's end of it.
func wsPair(t *testing.T) (server, client *websocket.Conn) {
	t.Helper()
	accepted := make(chan *websocket.Conn, 1)
	hold := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		accepted <- c
		<-hold
	}))
	t.Cleanup(func() { close(hold); srv.Close() })
	client, _, err := websocket.Dial(context.Background(), "ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	client.SetReadLimit(-1)
	t.Cleanup(func() { _ = client.CloseNow() })
	server = <-accepted
	t.Cleanup(func() { _ = server.CloseNow() })
	return server, client
}

// Writing a frame allocates nothing of the session's: a context with a
// deadline per frame, and the WebSocket's watch on it, were about ten
// allocations per frame. The client reads them all, in order.
func TestFrameWriteDoesNotAllocate(t *testing.T) {
	server, client := wsPair(t)
	w := newFrameWriter(server, writeTimeout)
	defer w.stop()
	frame := []byte(`{"type":"stats","body":{"videos":{}}}`)
	const runs = 200
	got := make(chan int, 1)
	go func() { // the client: reads every message into one buffer
		buf := make([]byte, 0, 4096)
		n := 0
		for n < runs+1 { // AllocsPerRun's warm-up call, then the runs
			_, r, err := client.Reader(context.Background())
			if err != nil {
				got <- n
				return
			}
			b := bytes.NewBuffer(buf[:0])
			if _, err := b.ReadFrom(r); err != nil || !bytes.Equal(b.Bytes(), frame) {
				got <- -1
				return
			}
			n++
		}
		got <- n
	}()
	allocs := testing.AllocsPerRun(runs, func() {
		if err := w.write(frame); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per frame written, want 0", allocs)
	}
	select {
	case n := <-got:
		if n != runs+1 {
			t.Errorf("the client read %d frames intact, want %d", n, runs+1)
		}
	case <-time.After(10 * time.Second):
		t.Error("the client did not read every frame within 10 s")
	}
}

// A client that stops reading is closed once a write has waited the
// timeout: the write fails instead of blocking the session.
func TestStuckFrameWriteClosesTheConnection(t *testing.T) {
	server, _ := wsPair(t) // the client never reads
	w := newFrameWriter(server, 200*time.Millisecond)
	defer w.stop()
	frame := bytes.Repeat([]byte("x"), 64<<10)
	start := time.Now()
	var err error
	for i := 0; err == nil && time.Since(start) < 10*time.Second; i++ {
		err = w.write(frame)
	}
	if err == nil {
		t.Fatal("writes to a client that does not read still succeed after 10 s")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the stuck write failed after %v, want about the 200 ms timeout", d)
	}
	if w.write([]byte("{}")) == nil {
		t.Fatal("a write after the close succeeded")
	}
}
