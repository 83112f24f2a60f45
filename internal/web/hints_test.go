package web

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/coder/websocket"
)

func TestWSHints(t *testing.T) {
	for _, tc := range []struct {
		query string
		want  Hints
		ok    bool
	}{
		{"", Hints{}, true},
		{"region=eu-west&bridge=n0a1b2c3d4e5f", Hints{Region: "eu-west", Bridge: "n0a1b2c3d4e5f"}, true},
		{"region=eu%20west", Hints{}, false},
		{"bridge=../x", Hints{}, false},
		{"lost=n0a1b2c3d4e5f&region=us", Hints{Region: "us", Lost: "n0a1b2c3d4e5f"}, true},
		{"lost=a/b", Hints{}, false},
		{"region=" + string(make([]byte, 33)), Hints{}, false},
	} {
		q, _ := url.ParseQuery(tc.query)
		got, err := wsHints(q)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("%q: %+v, %v", tc.query, got, err)
		}
	}
}

// In a cluster, a page served by another node may open this node's WebSocket
// (a redirect): its origin passes the dev-mode guard and the CSP names it.
func TestClusterOrigins(t *testing.T) {
	h := &Handler{Client: fstest.MapFS{"index.html": {Data: []byte("x")}}, Dev: true,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), ClusterHosts: func() []string { return []string{"127.0.0.1:7890"} },
		Serve: func(context.Context, *websocket.Conn, string, Hints) {}}
	routes := h.Routes()
	for _, tc := range []struct {
		origin string
		status int
	}{{"http://127.0.0.1:7880", 200}, {"http://127.0.0.1:7890", 200}, {"http://127.0.0.1:7891", 403}, {"http://evil.example", 403},
		// The loopback's other names for that node: a page opened at
		// localhost on a machine running several nodes.
		{"http://localhost:7890", 200}, {"http://[::1]:7890", 200}, {"http://localhost:7891", 403}} {
		r := httptest.NewRequest("GET", "http://127.0.0.1:7880/room", nil)
		r.Header.Set("Origin", tc.origin)
		w := httptest.NewRecorder()
		routes.ServeHTTP(w, r)
		if w.Code != tc.status {
			t.Errorf("Origin %s: %d, want %d", tc.origin, w.Code, tc.status)
		}
		if csp := w.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "connect-src 'self' ws://127.0.0.1:7890 wss://127.0.0.1:7890 ws://localhost:7890 wss://localhost:7890 ws://[::1]:7890 wss://[::1]:7890;") {
			t.Errorf("CSP %q", csp)
		}
	}
}
