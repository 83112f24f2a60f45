package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/podium-sfu/podium/internal/room"
)

// request sends one HTTP request with the given headers (Host included).
func request(t *testing.T, srv *Server, method, path, body string, headers map[string]string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, strings.TrimSuffix(srv.URL(), "/")+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		if k == "Host" {
			req.Host = v
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func audioMuted(t *testing.T, srv *Server, id string) bool {
	t.Helper()
	r, ok := srv.Hub().Room("main")
	if !ok {
		t.Fatal("room main ended")
	}
	st, _ := r.Stats(time.Now())
	for _, p := range st.Participants {
		if p.ID == id {
			return p.AudioMuted
		}
	}
	t.Fatalf("participant %s gone", id)
	return false
}

// TestDevModeRefusesCrossSiteAdmin reproduces the probe (issue 17, item 5): in
// dev mode a page on another site muted a participant with a text/plain POST,
// and a DNS-rebinding page (Host evil.example) closed a room and opened /ws.
func TestDevModeRefusesCrossSiteAdmin(t *testing.T) {
	srv := startServer(t, Options{}) // loopback without keys: dev mode
	victim := dialRaw(t, srv)
	victim.join("main", "Victim")
	mute := "/api/v1/rooms/main/participants/" + victim.id + "/mute"

	for name, h := range map[string]map[string]string{
		"cross-origin text/plain": {"Content-Type": "text/plain", "Origin": "https://evil.example"},
		"cross-origin JSON":       {"Content-Type": "application/json", "Origin": "https://evil.example"},
		"rebinding Host":          {"Content-Type": "application/json", "Host": "evil.example:7900", "Origin": "http://evil.example:7900"},
	} {
		if status, body := request(t, srv, "POST", mute, `{"audio":true}`, h); status != http.StatusForbidden {
			t.Errorf("%s: POST mute = %d %s, want 403", name, status, body)
		}
	}
	// A form or no-cors fetch from a page without Origin (old browsers) cannot
	// send JSON, so a text/plain body is refused whatever its Origin.
	if status, body := request(t, srv, "POST", mute, `{"audio":true}`, map[string]string{"Content-Type": "text/plain"}); status != http.StatusUnsupportedMediaType {
		t.Errorf("text/plain POST mute = %d %s, want 415", status, body)
	}
	if audioMuted(t, srv, victim.id) {
		t.Fatal("the victim was muted")
	}
	rebound := map[string]string{"Host": "evil.example:7900"}
	if status, body := request(t, srv, "DELETE", "/api/v1/rooms/main", "", rebound); status != http.StatusForbidden {
		t.Errorf("rebinding DELETE room = %d %s, want 403", status, body)
	}
	if _, ok := srv.Hub().Room("main"); !ok {
		t.Fatal("the room was closed")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	h := http.Header{}
	h.Set("Origin", "http://evil.example:7900")
	if conn, resp, err := websocket.Dial(ctx, wsURL(srv), &websocket.DialOptions{Host: "evil.example:7900", HTTPHeader: h}); err == nil {
		_ = conn.CloseNow()
		t.Error("rebinding /ws upgraded")
	} else if resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("rebinding /ws: %v", err)
	}

	// The same-origin page and curl still work.
	same := map[string]string{"Content-Type": "application/json", "Origin": strings.TrimSuffix(srv.URL(), "/")}
	if status, body := request(t, srv, "POST", mute, `{"audio":true}`, same); status != http.StatusOK {
		t.Fatalf("same-origin POST mute = %d %s", status, body)
	}
	if !audioMuted(t, srv, victim.id) {
		t.Error("a same-origin mute did not mute")
	}
	if status, body := request(t, srv, "DELETE", "/api/v1/rooms/main", "", map[string]string{"Host": "localhost"}); status != http.StatusOK {
		t.Errorf("DELETE room from localhost = %d %s", status, body)
	}
}

// TestLowercaseBearerAndHeaders (issue 17, item 7): the Authorization scheme is
// case-insensitive, and the page and the API carry the security headers.
func TestLowercaseBearerAndHeaders(t *testing.T) {
	srv := startServerWith(t, Options{}, withKeys)
	token := mint(t, "*", "ops", admin, time.Now().Add(time.Hour))
	for _, scheme := range []string{"Bearer", "bearer", "BEARER"} {
		status, body := request(t, srv, "GET", "/api/v1/rooms", "", map[string]string{"Authorization": scheme + " " + token})
		var rooms struct{ Rooms []room.Stats }
		if status != http.StatusOK || json.Unmarshal([]byte(body), &rooms) != nil {
			t.Errorf("Authorization: %s <token>: %d %s", scheme, status, body)
		}
	}
	for _, path := range []string{"/", "/standup?token=x", "/api/v1/rooms", "/healthz"} {
		req, _ := http.NewRequest("GET", strings.TrimSuffix(srv.URL(), "/")+path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		hd := resp.Header
		if !strings.Contains(hd.Get("Content-Security-Policy"), "frame-ancestors 'none'") || hd.Get("X-Frame-Options") != "DENY" ||
			hd.Get("Referrer-Policy") != "no-referrer" || hd.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s: headers %v", path, hd)
		}
	}
}
