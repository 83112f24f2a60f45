package web

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/coder/websocket"
)

func handler(serve func(context.Context, *websocket.Conn, string)) http.Handler {
	client := fstest.MapFS{
		"index.html": {Data: []byte("<!doctype html>INDEX")},
		"podium.js":  {Data: []byte("console.log(1)")},
	}
	h := &Handler{Client: client, Serve: serve, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	return h.Routes()
}

func TestRoutes(t *testing.T) {
	h := handler(nil)
	cases := []struct {
		path     string
		status   int
		contains string
	}{
		{"/", 200, "INDEX"},
		{"/standup", 200, "INDEX"},
		{"/standup?name=Ann", 200, "INDEX"},
		{"/podium.js", 200, "console.log"},
		{"/missing.css", 200, "INDEX"}, // a valid room name that is not a file
		{"/a/b", 404, ""},
		{"/" + strings.Repeat("x", 65), 404, ""},
		{"/healthz", 200, "ok"},
		{"/readyz", 200, "ready"},
	}
	for _, c := range cases {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", c.path, nil))
		if rec.Code != c.status || !strings.Contains(rec.Body.String(), c.contains) {
			t.Errorf("GET %s = %d %q, want %d containing %q", c.path, rec.Code, rec.Body.String(), c.status, c.contains)
		}
	}
}

func TestUnbuiltClientSaysSo(t *testing.T) {
	h := (&Handler{Client: fstest.MapFS{}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}).Routes()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/room", nil))
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "make build") {
		t.Errorf("got %d %q", rec.Code, rec.Body.String())
	}
}

func TestWebSocketReachesSession(t *testing.T) {
	got := make(chan string, 1)
	srv := httptest.NewServer(handler(func(ctx context.Context, c *websocket.Conn, _ string) {
		_, msg, err := c.Read(ctx)
		if err == nil {
			got <- string(msg)
		}
		_ = c.Close(websocket.StatusNormalClosure, "")
	}))
	defer srv.Close()
	c, _, err := websocket.Dial(context.Background(), "ws"+strings.TrimPrefix(srv.URL, "http")+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	if err := c.Write(context.Background(), websocket.MessageText, []byte(`{"type":"ping"}`)); err != nil {
		t.Fatal(err)
	}
	if msg := <-got; msg != `{"type":"ping"}` {
		t.Errorf("session got %q", msg)
	}
}
