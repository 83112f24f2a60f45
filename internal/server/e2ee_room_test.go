package server

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/podium-sfu/podium/internal/signal"
)

// TestE2EERequiredByRoom: an administrator makes a room require E2EE through the
// admin API; a plain join is then refused with e2ee-required and closed, an e2ee
// join admitted, and the participant already in the room who does not encrypt
// stays and is counted. Lifting it with room-settings admits plain joins again.
func TestE2EERequiredByRoom(t *testing.T) {
	srv := startServerWith(t, Options{}, withKeys)
	exp := time.Now().Add(time.Hour)
	join := func(rc *rawConn, name, token string, e2ee bool) {
		t.Helper()
		frame, err := signal.Encode(signal.TypeJoin, signal.Join{Version: signal.Version, Room: "main", Name: name, Token: token, E2EE: e2ee})
		if err != nil {
			t.Fatal(err)
		}
		rc.send(frame)
	}
	welcomed := func(m serverMsg) bool { return m.Type == signal.TypeWelcome }

	boss := dialRaw(t, srv)
	join(boss, "Boss", mint(t, "main", "boss", admin, exp), false)
	boss.waitFor("welcome", welcomed)

	status, body := api(t, srv, "PATCH", "/api/v1/rooms/main", mint(t, "main", "ops", admin, exp), `{"e2eeRequired":true}`)
	if status != http.StatusOK || !bytes.Contains(body, []byte(`"e2eeRequired": true`)) || !bytes.Contains(body, []byte(`"unencrypted": 1`)) {
		t.Fatalf("PATCH e2eeRequired: %d %s", status, body)
	}
	boss.waitFor("room requiring e2ee", func(m serverMsg) bool {
		return m.Type == signal.TypeRoom && strings.Contains(string(m.raw), `"e2eeRequired":true`)
	})

	plain := dialRaw(t, srv)
	join(plain, "Plain", mint(t, "main", "plain", pubSub, exp), false)
	plain.expectError(signal.CodeE2EERequired, true)
	plain.expectClose(websocket.StatusPolicyViolation)

	enc := dialRaw(t, srv)
	join(enc, "Enc", mint(t, "main", "enc", pubSub, exp), true)
	enc.waitFor("welcome", welcomed)

	// The boss, who does not encrypt, is still in the room and may lift it.
	boss.send([]byte(`{"type":"room-settings","e2eeRequired":false}`))
	enc.waitFor("room no longer requiring e2ee", func(m serverMsg) bool {
		return m.Type == signal.TypeRoom && !strings.Contains(string(m.raw), "e2ee")
	})
	again := dialRaw(t, srv)
	join(again, "Plain", mint(t, "main", "plain", pubSub, exp), false)
	again.waitFor("welcome", welcomed)
}
