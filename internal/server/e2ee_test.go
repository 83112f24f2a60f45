package server

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/podium-sfu/podium/internal/auth"
	"github.com/podium-sfu/podium/internal/signal"
)

// TestE2EERequiredByToken: a token with the e2ee claim admits only a join that
// says it encrypts end to end; without it the join is refused with
// e2ee-required and the connection closed. The server relays the fact in the
// participant's info.
func TestE2EERequiredByToken(t *testing.T) {
	srv := startServerWith(t, Options{}, withKeys)
	tok, err := auth.Sign(testKey, auth.Claims{Room: "main", Identity: "ann", Permissions: pubSub, E2EE: true, Expires: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	rc := dialRaw(t, srv)
	rc.joinFrame("main", "Ann", tok)
	rc.expectError(signal.CodeE2EERequired, true)
	rc.expectClose(websocket.StatusPolicyViolation)
	if n := len(srv.Hub().Rooms()); n != 0 {
		t.Errorf("a refused join left %d rooms", n)
	}

	join := func(rc *rawConn, name, token string, e2ee bool) serverMsg {
		frame, err := signal.Encode(signal.TypeJoin, signal.Join{Version: signal.Version, Room: "main", Name: name, Token: token, E2EE: e2ee})
		if err != nil {
			t.Fatal(err)
		}
		rc.send(frame)
		return rc.waitFor("welcome", func(m serverMsg) bool { return m.Type == signal.TypeWelcome })
	}
	ann := dialRaw(t, srv)
	join(ann, "Ann", tok, true)
	// A token without the claim admits a join without e2ee; each side learns
	// only whether the other said it encrypts.
	bob := dialRaw(t, srv)
	w := join(bob, "Bob", mint(t, "main", "bob", pubSub, time.Now().Add(time.Hour)), false)
	var welcome signal.Welcome
	if err := json.Unmarshal(w.raw, &welcome); err != nil || len(welcome.Participants) != 1 || !welcome.Participants[0].E2EE {
		t.Fatalf("Bob's welcome lists %+v (%v), want Ann with e2ee", welcome.Participants, err)
	}
	var bobs []signal.Participant
	ann.waitFor("Bob joined", func(m serverMsg) bool {
		var d signal.ParticipantDiff
		if m.Type != signal.TypeParticipants || json.Unmarshal(m.raw, &d) != nil {
			return false
		}
		bobs = slices.DeleteFunc(d.Participants, func(p signal.Participant) bool { return p.Name != "Bob" })
		return len(bobs) > 0
	})
	if len(bobs) != 1 || bobs[0].E2EE {
		t.Fatalf("Ann sees %+v, want Bob without e2ee", bobs)
	}
}
