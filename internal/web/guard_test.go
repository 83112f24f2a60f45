package web

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/podium-sfu/podium/internal/room"
)

func guarded(dev bool) http.Handler {
	admin := &Admin{Hub: room.NewHub(room.Settings{}), Dev: dev}
	h := &Handler{Client: fstest.MapFS{"index.html": {Data: []byte("INDEX")}}, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Dev: dev, HTTPHosts: []string{"meet.lan"}, Admin: admin.Routes()}
	return h.Routes()
}

// TestSecurityHeaders: the page, the API and errors all carry them.
func TestSecurityHeaders(t *testing.T) {
	h := guarded(false)
	for _, path := range []string{"/", "/standup?token=x", "/healthz", "/api/v1/rooms", "/a/b"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		hd := rec.Header()
		csp := hd.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'self'", "script-src 'self'", "frame-ancestors 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("%s: CSP %q lacks %s", path, csp, want)
			}
		}
		if strings.Contains(csp, "unsafe") {
			t.Errorf("%s: CSP %q allows unsafe sources", path, csp)
		}
		if hd.Get("X-Frame-Options") != "DENY" || hd.Get("Referrer-Policy") != "no-referrer" || hd.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: headers %v", path, hd)
		}
	}
}

// TestDevModeRefusesOtherSites: in dev mode a request naming another host (DNS
// rebinding) or coming from another origin is refused on every route.
func TestDevModeRefusesOtherSites(t *testing.T) {
	cases := []struct {
		host, origin string
		ok           bool
	}{
		{"127.0.0.1:7880", "", true},
		{"localhost:7880", "http://localhost:7880", true},
		{"LocalHost.", "", true},
		{"127.3.4.5", "", true},
		{"[::1]:7880", "http://[::1]:7880", true},
		{"192.168.1.20:7880", "https://192.168.1.20:7880", true}, // --http 0.0.0.0 --dev on a LAN
		{"meet.lan:7880", "", true},                              // the --http host
		{"evil.example:7900", "", false},
		{"evil.example:7900", "http://evil.example:7900", false},
		{"localhost.evil.example", "", false},
		{"127.0.0.1:7880", "https://evil.example", false},
		{"127.0.0.1:7880", "null", false},
		{"127.0.0.1:7880", "http://127.0.0.1:7881", false},
		{"", "", false},
	}
	dev, prod := guarded(true), guarded(false)
	for _, c := range cases {
		for _, path := range []string{"/", "/standup", "/healthz", "/ws", "/api/v1/rooms"} {
			req := httptest.NewRequest("GET", path, nil)
			req.Host = c.host
			if c.origin != "" {
				req.Header.Set("Origin", c.origin)
			}
			rec := httptest.NewRecorder()
			dev.ServeHTTP(rec, req)
			if refused := rec.Code == http.StatusForbidden; refused == c.ok {
				t.Errorf("dev: GET %s Host %q Origin %q: %d %q", path, c.host, c.origin, rec.Code, rec.Body.String())
			}
			if path == "/ws" {
				continue // not a WebSocket handshake: the upgrade itself answers 4xx
			}
			rec = httptest.NewRecorder()
			prod.ServeHTTP(rec, req)
			if rec.Code == http.StatusForbidden {
				t.Errorf("with keys: GET %s Host %q Origin %q refused", path, c.host, c.origin)
			}
		}
	}
}

// TestAdminRefusesSimpleCrossSiteBodies: a POST a form or no-cors fetch could
// send (text/plain, form encoding, no type) is refused unless it carries an
// Authorization header, which no page can add without a preflight.
func TestAdminRefusesSimpleCrossSiteBodies(t *testing.T) {
	h := guarded(true)
	for _, c := range []struct {
		ctype, authz string
		want         int
	}{
		{"text/plain", "", http.StatusUnsupportedMediaType},
		{"application/x-www-form-urlencoded", "", http.StatusUnsupportedMediaType},
		{"multipart/form-data; boundary=x", "", http.StatusUnsupportedMediaType},
		{"", "", http.StatusUnsupportedMediaType},
		{"application/json", "", http.StatusNotFound},                      // got past the check: no such room
		{"Application/JSON; charset=utf-8", "", http.StatusNotFound},       // media types are case-insensitive
		{"text/plain", "Bearer anything-in-dev-mode", http.StatusNotFound}, // a preflight would have been needed
	} {
		req := httptest.NewRequest("POST", "/api/v1/rooms/main/participants/p1/mute", strings.NewReader(`{"audio":true}`))
		req.Host = "127.0.0.1:7880"
		if c.ctype != "" {
			req.Header.Set("Content-Type", c.ctype)
		}
		if c.authz != "" {
			req.Header.Set("Authorization", c.authz)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != c.want {
			t.Errorf("POST Content-Type %q Authorization %q: %d %s, want %d", c.ctype, c.authz, rec.Code, rec.Body.String(), c.want)
		}
	}
}

func TestBearerToken(t *testing.T) {
	for _, c := range []struct {
		header, token string
		ok            bool
	}{
		{"Bearer abc", "abc", true},
		{"bearer abc", "abc", true},
		{"BEARER  abc", "abc", true},
		{"Basic abc", "", false},
		{"Bearer", "", false},
		{"Bearer ", "", false},
		{"Bearerabc", "", false},
		{"", "", false},
	} {
		token, ok := BearerToken(c.header)
		if ok != c.ok || (ok && token != c.token) {
			t.Errorf("BearerToken(%q) = %q %v", c.header, token, ok)
		}
	}
}
