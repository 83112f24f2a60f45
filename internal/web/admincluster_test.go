package web

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/podium-sfu/podium/internal/room"
	"github.com/podium-sfu/podium/internal/signal"
)

// fakeCluster answers as the room's other bridges would.
type fakeCluster struct {
	err       error
	found     bool
	acts      []ParticipantAction
	elsewhere []string
	gone      string // a room whose bridge does not answer
}

func (f *fakeCluster) Settings(context.Context, string, signal.RoomSettings) error { return f.err }
func (f *fakeCluster) Participant(_ context.Context, _, id string, act ParticipantAction) (json.RawMessage, string, bool, error) {
	f.acts = append(f.acts, act)
	return json.RawMessage(`{"id":"` + id + `"}`), "node1", f.found && f.err == nil, f.err
}
func (f *fakeCluster) Room(_ context.Context, name string) (json.RawMessage, string, bool, error) {
	if name == f.gone {
		return nil, "", false, ErrBridgeTimeout
	}
	return json.RawMessage(`{"name":"` + name + `"}`), "node1", f.found && f.err == nil, f.err
}
func (f *fakeCluster) Elsewhere() []string { return f.elsewhere }
func (f *fakeCluster) Close(context.Context, string) (int, error) {
	if f.found {
		return 2, f.err
	}
	return 0, f.err
}

// TestAdminAcrossBridges: with a cluster, an action on a participant or room
// not served here goes to the bridge serving it, and a bridge that cannot be
// reached is a clear error: 504 when it timed out, 502 when it is gone, 503
// when the settings could not be changed; a participant no bridge has is 404.
func TestAdminAcrossBridges(t *testing.T) {
	cases := []struct {
		name, method, path, body string
		fake                     fakeCluster
		status                   int
		code                     string // error code, or a substring of the body
	}{
		{"mute elsewhere", "POST", "/api/v1/rooms/r/participants/p1/mute", `{"audio":true}`, fakeCluster{found: true}, 200, `"node": "node1"`},
		{"mute nowhere", "POST", "/api/v1/rooms/r/participants/p1/mute", `{"audio":true}`, fakeCluster{}, 404, "not-found"},
		{"mute timed out", "POST", "/api/v1/rooms/r/participants/p1/mute", `{"audio":true}`, fakeCluster{err: ErrBridgeTimeout}, 504, "bridge-timeout"},
		{"remove, bridge gone", "DELETE", "/api/v1/rooms/r/participants/p1", "", fakeCluster{err: errors.New("no responders")}, 502, "bridge-unavailable"},
		{"remove elsewhere", "DELETE", "/api/v1/rooms/r/participants/p1", "", fakeCluster{found: true}, 204, ""},
		{"get elsewhere", "GET", "/api/v1/rooms/r/participants/p1", "", fakeCluster{found: true}, 200, `"node": "node1"`},
		{"room elsewhere", "GET", "/api/v1/rooms/r", "", fakeCluster{found: true}, 200, `"node": "node1"`},
		{"room nowhere", "GET", "/api/v1/rooms/r", "", fakeCluster{}, 404, "not-found"},
		{"settings elsewhere", "PATCH", "/api/v1/rooms/r", `{"lastN":2}`, fakeCluster{found: true}, 200, `"node": "node1"`},
		{"close elsewhere", "DELETE", "/api/v1/rooms/r", "", fakeCluster{found: true}, 200, `"removed": 2`},
		{"close, a bridge timed out", "DELETE", "/api/v1/rooms/r", "", fakeCluster{found: true, err: ErrBridgeTimeout}, 504, "bridge-timeout"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := c.fake
			a := &Admin{Hub: room.NewHub(room.DefaultSettings()), Dev: true, Cluster: &f}
			req := httptest.NewRequest(c.method, c.path, strings.NewReader(c.body))
			if c.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			w := httptest.NewRecorder()
			a.Routes().ServeHTTP(w, req)
			if w.Code != c.status || !strings.Contains(w.Body.String(), c.code) {
				t.Fatalf("%s %s: %d %s, want %d with %q", c.method, c.path, w.Code, w.Body, c.status, c.code)
			}
			if strings.HasSuffix(c.path, "/mute") && c.status != 404 && (len(f.acts) != 1 || f.acts[0].Mute == nil || !f.acts[0].Mute.Audio) {
				t.Fatalf("the bridge was asked %+v", f.acts)
			}
		})
	}
	// Settings that cannot be written: 503, nothing changed.
	a := &Admin{Hub: room.NewHub(room.DefaultSettings()), Dev: true, Cluster: settingsFail{&fakeCluster{found: true}}}
	req := httptest.NewRequest("PATCH", "/api/v1/rooms/r", strings.NewReader(`{"lastN":2}`))
	req.Header.Set("Content-Type", "application/json")
	w := httptest.NewRecorder()
	a.Routes().ServeHTTP(w, req)
	if w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), "cluster-unavailable") {
		t.Fatalf("PATCH with the settings unavailable: %d %s", w.Code, w.Body)
	}
}

// settingsFail is a cluster whose settings cannot be written.
type settingsFail struct{ *fakeCluster }

func (settingsFail) Settings(context.Context, string, signal.RoomSettings) error {
	return errors.New("no JetStream leader")
}

// TestAdminListsRoomsOfOtherBridges: in a cluster GET /rooms lists the rooms
// other bridges serve too, each with its bridge, those the token may
// administer only, and names the ones whose bridge did not answer.
func TestAdminListsRoomsOfOtherBridges(t *testing.T) {
	f := &fakeCluster{found: true, elsewhere: []string{"b", "a", "gone"}, gone: "gone"}
	a := &Admin{Hub: room.NewHub(room.DefaultSettings()), Dev: true, Cluster: f}
	w := httptest.NewRecorder()
	a.Routes().ServeHTTP(w, httptest.NewRequest("GET", "/api/v1/rooms", nil))
	var got struct {
		Rooms []struct {
			Name string `json:"name"`
			Node string `json:"node"`
		} `json:"rooms"`
		Errors []struct {
			Room  string `json:"room"`
			Error string `json:"error"`
		} `json:"errors"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &got); w.Code != http.StatusOK || err != nil {
		t.Fatalf("GET /rooms: %d %s", w.Code, w.Body)
	}
	if len(got.Rooms) != 2 || got.Rooms[0].Name != "a" || got.Rooms[1].Name != "b" || got.Rooms[0].Node != "node1" {
		t.Fatalf("rooms %+v", got.Rooms)
	}
	if len(got.Errors) != 1 || got.Errors[0].Room != "gone" || !strings.Contains(got.Errors[0].Error, "in time") {
		t.Fatalf("errors %+v", got.Errors)
	}
}
