package server

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/podium-sfu/podium/internal/auth"
	"github.com/podium-sfu/podium/internal/client"
	"github.com/podium-sfu/podium/internal/room"
	"github.com/podium-sfu/podium/internal/signal"
)

// api makes one admin API request; token "" sends no Authorization header.
func api(t *testing.T, srv *Server, method, path, token, body string) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	return httpDo(t, method, strings.TrimSuffix(srv.URL(), "/")+path, token, "", rd)
}

// httpDo makes one HTTP request and returns the status and body; token and
// contentType "" send no such header.
func httpDo(t *testing.T, method, u, token, contentType string, body io.Reader) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func apiErrorCode(b []byte) string {
	var e struct {
		Error struct{ Code string } `json:"error"`
	}
	_ = json.Unmarshal(b, &e)
	return e.Error.Code
}

// TestAdminAPI drives every endpoint against a live call: authentication and
// scopes, listing with stats, Last N, mute, remove and close.
func TestAdminAPI(t *testing.T) {
	srv := startServerWith(t, Options{}, withKeys)
	exp := time.Now().Add(time.Hour)
	a := dialToken(t, srv, "main", "A", mint(t, "main", "a", pubSub, exp), true)
	b := dialToken(t, srv, "main", "B", mint(t, "main", "b", pubSub, exp), true)
	c := dialToken(t, srv, "main", "C", mint(t, "main", "c", pubSub, exp), false)
	dialToken(t, srv, "side", "S", mint(t, "side", "s", pubSub, exp), false)
	aID, bID, cID := a.Snapshot().ID, b.Snapshot().ID, c.Snapshot().ID
	waitFor(t, a, "A receives B", 10*time.Second, receiving(bID))
	waitFor(t, b, "B receives A", 10*time.Second, receiving(aID))
	waitFor(t, c, "C receives A and B", 10*time.Second, receiving(aID, bID))

	global := mint(t, auth.AnyRoom, "ops", auth.Permissions{Admin: true}, exp)
	mainOnly := mint(t, "main", "host", admin, exp)
	sideOnly := mint(t, "side", "host", admin, exp)

	t.Run("authentication", func(t *testing.T) {
		for _, tt := range []struct {
			token  string
			status int
			code   string
		}{
			{"", http.StatusUnauthorized, signal.CodeUnauthorized},
			{"garbage", http.StatusUnauthorized, signal.CodeUnauthorized},
			{mint(t, auth.AnyRoom, "x", admin, time.Now().Add(-time.Hour)), http.StatusUnauthorized, signal.CodeTokenExpired},
			{mint(t, "main", "a", pubSub, exp), http.StatusForbidden, signal.CodeForbidden}, // no admin permission
			{sideOnly, http.StatusForbidden, signal.CodeForbidden},                          // another room
		} {
			status, body := api(t, srv, "GET", "/api/v1/rooms/main", tt.token, "")
			if status != tt.status || apiErrorCode(body) != tt.code {
				t.Errorf("token %.20q: %d %s, want %d %s", tt.token, status, body, tt.status, tt.code)
			}
		}
		// A room-scoped admin token lists its room only.
		status, body := api(t, srv, "GET", "/api/v1/rooms", sideOnly, "")
		var list struct{ Rooms []room.Stats }
		if status != 200 || json.Unmarshal(body, &list) != nil || len(list.Rooms) != 1 || list.Rooms[0].Name != "side" {
			t.Errorf("side admin lists %d %s", status, body)
		}
	})

	t.Run("list with stats", func(t *testing.T) {
		status, body := api(t, srv, "GET", "/api/v1/rooms", global, "")
		var list struct{ Rooms []room.Stats }
		if status != 200 || json.Unmarshal(body, &list) != nil || len(list.Rooms) != 2 {
			t.Fatalf("%d %s", status, body)
		}
		m := list.Rooms[0]
		if m.Name != "main" || len(m.Participants) != 3 || m.Tracks["video"] != 2 || m.Forwarding["video"] != 4 {
			t.Errorf("room %+v", m)
		}
		pa := m.Participants[0]
		if pa.ID != aID || pa.Identity != "a" || !pa.Permissions.Publish || len(pa.Publishing) != 2 || pa.Receiving != 2 || pa.BytesOut == 0 {
			t.Errorf("participant %+v", pa)
		}
		for _, tr := range pa.Publishing {
			if tr.Packets == 0 || tr.Bytes == 0 {
				t.Errorf("track %+v has no counts", tr)
			}
		}
		status, body = api(t, srv, "GET", "/api/v1/rooms/main/participants/"+cID, mainOnly, "")
		if status != 200 || !strings.Contains(string(body), `"identity": "c"`) {
			t.Errorf("participant C: %d %s", status, body)
		}
		for _, path := range []string{"/api/v1/rooms/nowhere", "/api/v1/rooms/main/participants/pnobody", "/api/v1/nothing"} {
			if status, body := api(t, srv, "GET", path, global, ""); status != http.StatusNotFound || apiErrorCode(body) != "not-found" {
				t.Errorf("GET %s: %d %s", path, status, body)
			}
		}
	})

	t.Run("last N", func(t *testing.T) {
		for _, bad := range []string{`{"lastN":5000}`, `{"lastN":"2"}`, `{"last":2}`, `{}`, `{"lastN":1} {}`, `[`} {
			if status, body := api(t, srv, "PATCH", "/api/v1/rooms/main", mainOnly, bad); status != http.StatusBadRequest {
				t.Errorf("PATCH %s: %d %s", bad, status, body)
			}
		}
		if status, _ := api(t, srv, "PATCH", "/api/v1/rooms/main", mainOnly, `{"pad":"`+strings.Repeat("x", 70<<10)+`"}`); status != http.StatusRequestEntityTooLarge {
			t.Errorf("huge body: %d", status)
		}
		status, body := api(t, srv, "PATCH", "/api/v1/rooms/main", mainOnly, `{"lastN":1}`)
		if status != 200 || !strings.Contains(string(body), `"lastN": 1`) {
			t.Fatalf("%d %s", status, body)
		}
		waitFor(t, c, "C receives one video", 5*time.Second, func(s *client.State) bool { return len(s.Forwarded) == 1 })
	})

	t.Run("mute", func(t *testing.T) {
		if status, body := api(t, srv, "POST", "/api/v1/rooms/main/participants/"+aID+"/mute", mainOnly, `{"audio":true}`); status != 200 ||
			!strings.Contains(string(body), `"adminMuted": {`) {
			t.Fatalf("%d %s", status, body)
		}
		waitFor(t, a, "A told it is muted", 5*time.Second, func(s *client.State) bool { return s.AdminMuted.Audio })
		waitFor(t, b, "B sees A muted", 5*time.Second, func(s *client.State) bool { return s.Participants[aID].AudioMuted })
		waitFor(t, b, "A's audio stops reaching B", 5*time.Second, func(s *client.State) bool {
			return time.Since(s.Tracks["audio-"+aID].LastSeen) > 500*time.Millisecond
		})
		api(t, srv, "POST", "/api/v1/rooms/main/participants/"+aID+"/mute", mainOnly, `{"audio":false}`)
		waitFor(t, b, "A's audio back at B", 5*time.Second, func(s *client.State) bool {
			return time.Since(s.Tracks["audio-"+aID].LastSeen) < 200*time.Millisecond && !s.Participants[aID].AudioMuted
		})
	})

	t.Run("remove", func(t *testing.T) {
		if status, body := api(t, srv, "DELETE", "/api/v1/rooms/main/participants/"+bID, mainOnly, ""); status != http.StatusNoContent {
			t.Fatalf("%d %s", status, body)
		}
		waitFor(t, b, "bye removed", 5*time.Second, func(s *client.State) bool { return s.ByeCode == signal.ByeRemoved && s.Closed != nil })
		waitFor(t, a, "A sees B leave", 5*time.Second, absent(bID))
	})

	t.Run("close room", func(t *testing.T) {
		status, body := api(t, srv, "DELETE", "/api/v1/rooms/main", global, "")
		if status != 200 || !strings.Contains(string(body), `"removed": 2`) {
			t.Fatalf("%d %s", status, body)
		}
		for _, cl := range []*client.Client{a, c} {
			waitFor(t, cl, "bye room-closed", 5*time.Second, func(s *client.State) bool { return s.ByeCode == signal.ByeRoomClosed && s.Closed != nil })
		}
		waitUntil(t, "the room to end", 5*time.Second, func() bool { _, ok := srv.Hub().Room("main"); return !ok })
		if status, _ := api(t, srv, "GET", "/api/v1/rooms/main", global, ""); status != http.StatusNotFound {
			t.Errorf("closed room: %d", status)
		}
	})
}

// TestAdminAPIDevMode: in dev mode the admin API needs no token.
func TestAdminAPIDevMode(t *testing.T) {
	srv := startServer(t, Options{})
	dial(t, srv, "main", "A", false)
	status, body := api(t, srv, "GET", "/api/v1/rooms", "", "")
	if status != 200 || !bytes.Contains(body, []byte(`"name": "main"`)) {
		t.Errorf("%d %s", status, body)
	}
}
