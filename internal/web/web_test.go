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
	h := &Handler{Client: client, Serve: func(ctx context.Context, c *websocket.Conn, remote string, _ Hints) {
		serve(ctx, c, remote)
	}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
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

func TestReadyz(t *testing.T) {
	ready := true
	h := (&Handler{Client: fstest.MapFS{}, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Ready: func() (bool, string) { return ready, "draining" }}).Routes()
	for _, tt := range []struct {
		ready  bool
		status int
		body   string
	}{{true, 200, "ready\n"}, {false, 503, "draining\n"}} {
		ready = tt.ready
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
		if rec.Code != tt.status || rec.Body.String() != tt.body {
			t.Errorf("ready=%v: %d %q", tt.ready, rec.Code, rec.Body.String())
		}
	}
}

func TestMetricsRoute(t *testing.T) {
	h := (&Handler{Client: fstest.MapFS{}, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Metrics: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "# TYPE x gauge\nx 1\n") })}).Routes()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 || rec.Body.String() != "# TYPE x gauge\nx 1\n" {
		t.Errorf("%d %q", rec.Code, rec.Body.String())
	}
	// Without a metrics handler there is no /metrics (it is a room name then).
	rec = httptest.NewRecorder()
	handler(nil).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if strings.Contains(rec.Body.String(), "# TYPE") {
		t.Error("metrics served without a handler")
	}
}

func TestClientIP(t *testing.T) {
	for _, tt := range []struct {
		remote string
		xff    []string
		trust  bool
		want   string
	}{
		{"192.0.2.1:5000", nil, false, "192.0.2.1"},
		{"[2001:db8::1]:5000", nil, false, "2001:db8::1"},
		{"192.0.2.1:5000", []string{"203.0.113.9"}, false, "192.0.2.1"}, // not trusted: ignored
		{"10.0.0.2:5000", []string{"203.0.113.9"}, true, "203.0.113.9"},
		{"10.0.0.2:5000", []string{"198.51.100.7, 203.0.113.9"}, true, "203.0.113.9"}, // the proxy's own entry is last
		{"10.0.0.2:5000", []string{"spoofed", "203.0.113.9 "}, true, "203.0.113.9"},
		{"10.0.0.2:5000", []string{"not an ip"}, true, "10.0.0.2"},
	} {
		r := httptest.NewRequest("GET", "/ws", nil)
		r.RemoteAddr = tt.remote
		for _, v := range tt.xff {
			r.Header.Add("X-Forwarded-For", v)
		}
		if got := ClientIP(r, tt.trust); got != tt.want {
			t.Errorf("ClientIP(%s, %v, trust %v) = %s, want %s", tt.remote, tt.xff, tt.trust, got, tt.want)
		}
	}
}
