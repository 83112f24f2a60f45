package server

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/podium-sfu/podium/internal/auth"
	"github.com/podium-sfu/podium/internal/client"
	"github.com/podium-sfu/podium/internal/config"
	"github.com/podium-sfu/podium/internal/signal"
)

var testKey = auth.Key{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")}

// withKeys turns access control on: the server is on loopback, with a key.
func withKeys(c *config.Config) { c.AuthKeys = []string{testKey.ID + ":" + string(testKey.Secret)} }

var (
	pubSub  = auth.Permissions{Publish: true, Subscribe: true}
	subOnly = auth.Permissions{Subscribe: true}
	pubOnly = auth.Permissions{Publish: true}
	admin   = auth.Permissions{Publish: true, Subscribe: true, Admin: true}
)

func mint(t *testing.T, room, identity string, perms auth.Permissions, expires time.Time) string {
	t.Helper()
	tok, err := auth.Sign(testKey, auth.Claims{Room: room, Identity: identity, Permissions: perms, Expires: expires})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// dialToken joins with a token; publish asks the client to publish (the server
// may refuse).
func dialToken(t *testing.T, s *Server, room, name, token string, publish bool) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, client.Options{URL: wsURL(s), Room: room, Name: name, Publish: publish, Token: token})
	if err != nil {
		t.Fatalf("%s joins %s: %v", name, room, err)
	}
	t.Cleanup(c.Close)
	return c
}

// joinFrame sends a join with token (and the welcome or error comes back).
func (rc *rawConn) joinFrame(room, name, token string) {
	rc.t.Helper()
	frame, err := signal.Encode(signal.TypeJoin, signal.Join{Version: signal.Version, Room: room, Name: name, Token: token})
	if err != nil {
		rc.t.Fatal(err)
	}
	rc.send(frame)
}

// TestTokensRejected: with access control on, a join needs a valid token for its
// room: missing, expired, not yet valid, forged, malformed, alg none, unknown key
// and wrong-room tokens are refused with a fatal error and the connection closed.
func TestTokensRejected(t *testing.T) {
	srv := startServerWith(t, Options{}, withKeys)
	now := time.Now()
	forger := auth.Key{ID: "k1", Secret: []byte("somebody else's secret, 32 bytes+")}
	forged, _ := auth.Sign(forger, auth.Claims{Room: "main", Permissions: admin, Expires: now.Add(time.Hour)})
	notYet, _ := auth.Sign(testKey, auth.Claims{Room: "main", Permissions: pubSub, NotBefore: now.Add(time.Hour), Expires: now.Add(2 * time.Hour)})
	unknownKey, _ := auth.Sign(auth.Key{ID: "k9", Secret: testKey.Secret}, auth.Claims{Room: "main", Expires: now.Add(time.Hour)})
	valid := mint(t, "main", "ann", pubSub, now.Add(time.Hour))
	parts := strings.Split(valid, ".")
	algNone := "eyJhbGciOiJub25lIn0." + parts[1] + "."

	for _, tt := range []struct {
		name, token, code string
	}{
		{"missing", "", signal.CodeUnauthorized},
		{"expired", mint(t, "main", "ann", pubSub, now.Add(-time.Hour)), signal.CodeTokenExpired},
		{"not yet valid", notYet, signal.CodeUnauthorized},
		{"forged", forged, signal.CodeUnauthorized},
		{"tampered payload", parts[0] + "." + strings.Split(mint(t, "*", "x", admin, now.Add(time.Hour)), ".")[1] + "." + parts[2], signal.CodeUnauthorized},
		{"alg none", algNone, signal.CodeUnauthorized},
		{"malformed", "not-a-token", signal.CodeUnauthorized},
		{"unknown key id", unknownKey, signal.CodeUnauthorized},
		{"another room", mint(t, "other", "ann", admin, now.Add(time.Hour)), signal.CodeForbidden},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rc := dialRaw(t, srv)
			rc.joinFrame("main", "Ann", tt.token)
			rc.expectError(tt.code, true)
			rc.expectClose(websocket.StatusPolicyViolation)
		})
	}
	if n := len(srv.Hub().Rooms()); n != 0 {
		t.Errorf("refused joins left %d rooms", n)
	}

	// A valid token admits, and welcome says what it allows.
	rc := dialRaw(t, srv)
	rc.joinFrame("main", "Ann", valid)
	w := rc.waitFor("welcome", func(m serverMsg) bool { return m.Type == signal.TypeWelcome })
	var welcome signal.Welcome
	if err := json.Unmarshal(w.raw, &welcome); err != nil || welcome.Permissions == nil ||
		*welcome.Permissions != (signal.Permissions{Publish: true, Subscribe: true}) {
		t.Errorf("welcome %s", w.raw)
	}
	// A token for every room admits to any.
	rc2 := dialRaw(t, srv)
	rc2.joinFrame("elsewhere", "Ops", mint(t, auth.AnyRoom, "ops", admin, now.Add(time.Hour)))
	rc2.waitFor("welcome", func(m serverMsg) bool { return m.Type == signal.TypeWelcome })
}

// TestPermissionsEnforced: a subscribe-only participant's publish offer is
// refused (forbidden) and nobody receives media from it, while it receives the
// others; a participant without subscribe receives nothing; room-settings need
// admin. Participants of another room never see any of this media.
func TestPermissionsEnforced(t *testing.T) {
	srv := startServerWith(t, Options{}, withKeys)
	exp := time.Now().Add(time.Hour)
	pub := dialToken(t, srv, "main", "Pub", mint(t, "main", "pub", pubSub, exp), true)
	viewer := dialToken(t, srv, "main", "Viewer", mint(t, "main", "viewer", subOnly, exp), true) // tries to publish
	deaf := dialToken(t, srv, "main", "Deaf", mint(t, "main", "deaf", pubOnly, exp), true)
	other := dialToken(t, srv, "other", "Other", mint(t, "other", "other", pubSub, exp), true)
	pubID, viewerID, deafID := pub.Snapshot().ID, viewer.Snapshot().ID, deaf.Snapshot().ID

	waitFor(t, viewer, "forbidden for the publish offer", 10*time.Second, func(s *client.State) bool {
		for _, e := range s.Errors {
			if e.Code == signal.CodeForbidden && !e.Fatal && strings.Contains(e.Message, "publish") {
				return true
			}
		}
		return false
	})
	waitFor(t, viewer, "viewer receives Pub", 10*time.Second, receiving(pubID))
	waitFor(t, pub, "Pub receives Deaf", 10*time.Second, receiving(deafID))
	time.Sleep(time.Second) // long enough for media that should not flow to show up
	if st := pub.Snapshot(); st.Tracks["audio-"+viewerID] != nil || st.Tracks["video-"+viewerID] != nil {
		t.Errorf("Pub receives the subscribe-only viewer's media: %v", keys(st.Tracks))
	}
	if st := deaf.Snapshot(); len(st.Tracks) != 0 || st.Offers != 0 {
		t.Errorf("a participant without subscribe received %v (%d offers)", keys(st.Tracks), st.Offers)
	}
	if st := viewer.Snapshot(); st.Closed != nil {
		t.Errorf("a forbidden publish closed the viewer: %v", st.Closed)
	}
	for _, c := range []*client.Client{pub, viewer, deaf} {
		for id := range c.Snapshot().Tracks {
			if strings.HasSuffix(id, other.Snapshot().ID) {
				t.Errorf("%s receives %s from another room", c.Snapshot().ID, id)
			}
		}
	}
	if st := other.Snapshot(); len(st.Tracks) != 0 || len(st.Participants) != 0 {
		t.Errorf("the other room's participant sees %v and receives %v", st.Participants, keys(st.Tracks))
	}

	// room-settings: not for the viewer; for an admin.
	four := 4
	_ = viewer.Send(signal.TypeRoomSettings, signal.RoomSettings{LastN: &four})
	waitFor(t, viewer, "forbidden for room-settings", 5*time.Second, func(s *client.State) bool {
		for _, e := range s.Errors {
			if e.Code == signal.CodeForbidden && strings.Contains(e.Message, "admin") {
				return true
			}
		}
		return false
	})
	if r, ok := srv.Hub().Room("main"); !ok || r.Settings().LastN == 4 {
		t.Fatal("a non-admin changed the room's Last N")
	}
	boss := dialToken(t, srv, "main", "Boss", mint(t, "main", "boss", admin, exp), false)
	_ = boss.Send(signal.TypeRoomSettings, signal.RoomSettings{LastN: &four})
	waitUntil(t, "the admin's room-settings", 5*time.Second, func() bool {
		r, ok := srv.Hub().Room("main")
		return ok && r.Settings().LastN == 4
	})
	if errs := boss.Snapshot().Errors; len(errs) != 0 {
		t.Errorf("admin got errors %+v", errs)
	}
}

func keys[V any](m map[string]V) []string {
	out := []string{}
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestTokenExpiryAndRefresh: privileged actions check the token again; an
// expired one gets token-expired (not fatal), and a fresh token sent in a token
// message restores them. A refresh for another identity is refused.
func TestTokenExpiryAndRefresh(t *testing.T) {
	var clock atomic.Int64
	start := time.Now()
	clock.Store(start.UnixNano())
	srv := startServerWith(t, Options{Now: func() time.Time { return time.Unix(0, clock.Load()) }}, withKeys)
	rc := dialRaw(t, srv)
	rc.joinFrame("main", "Boss", mint(t, "main", "boss", admin, start.Add(time.Minute)))
	rc.waitFor("welcome", func(m serverMsg) bool { return m.Type == signal.TypeWelcome })

	clock.Store(start.Add(10 * time.Minute).UnixNano())
	rc.send([]byte(`{"type":"room-settings","lastN":2}`))
	rc.expectError(signal.CodeTokenExpired, false)
	rc.expectPong(1)

	refresh := func(tok string) []byte {
		b, _ := signal.Encode(signal.TypeToken, signal.TokenRefresh{Token: tok})
		return b
	}
	rc.send(refresh(mint(t, "main", "mallory", admin, start.Add(time.Hour))))
	rc.expectError(signal.CodeForbidden, false)
	rc.send(refresh(mint(t, "main", "boss", admin, start.Add(time.Hour))))
	rc.send([]byte(`{"type":"room-settings","lastN":2}`))
	rc.waitFor("room lastN 2", func(m serverMsg) bool {
		return m.Type == signal.TypeRoom && strings.Contains(string(m.raw), `"lastN":2`)
	})
}

// TestDisplayNameFromToken: a token's name is the participant's name, whatever
// the client puts in join.
func TestDisplayNameFromToken(t *testing.T) {
	srv := startServerWith(t, Options{}, withKeys)
	tok, _ := auth.Sign(testKey, auth.Claims{Room: "main", Identity: "ann", Name: "Ann Smith", Permissions: pubSub, Expires: time.Now().Add(time.Hour)})
	a := dialToken(t, srv, "main", "The CEO", tok, false)
	b := dialToken(t, srv, "main", "Bob", mint(t, "main", "bob", pubSub, time.Now().Add(time.Hour)), false)
	id := a.Snapshot().ID
	waitFor(t, b, "sees Ann", 5*time.Second, present(id))
	if got := b.Snapshot().Participants[id].Name; got != "Ann Smith" {
		t.Errorf("name %q, want the token's", got)
	}
}
