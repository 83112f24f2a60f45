package server

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/podium-sfu/podium/internal/client"
	"github.com/podium-sfu/podium/internal/signal"
)

// TestAudienceJoinsReceiveOnly: a participant whose token lacks publish, and
// one whose token grants it but who joins with audience set, both join
// receive-only: welcome grants no publish, the server makes no publish
// connection for them (nor do they), they receive the publisher's audio and
// video, the roster marks them audience, and the publisher holds no state for
// them: it receives nothing and its Last N names only publishers.
func TestAudienceJoinsReceiveOnly(t *testing.T) {
	srv := startServerWith(t, Options{}, withKeys)
	exp := time.Now().Add(time.Hour)
	pub := dialToken(t, srv, "main", "Pub", mint(t, "main", "pub", pubSub, exp), true)
	pubID := pub.Snapshot().ID
	publishPCs, subscribePCs := srv.engine.PeerConnectionsMade()

	viewer := dialToken(t, srv, "main", "Viewer", mint(t, "main", "viewer", subOnly, exp), false)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Audience with a token that would let it publish; it even tries to.
	chosen, err := client.Dial(ctx, client.Options{URL: wsURL(srv), Room: "main", Name: "Chosen",
		Token: mint(t, "main", "chosen", pubSub, exp), Audience: true, Publish: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(chosen.Close)
	if p, s := srv.engine.PeerConnectionsMade(); p != publishPCs || s != subscribePCs+2 {
		t.Errorf("two audience joins made %d publish and %d subscribe connections at the server, want 0 and 2",
			p-publishPCs, s-subscribePCs)
	}
	if viewer.HasPublishConnection() {
		t.Error("the viewer's client made a publish connection")
	}
	for _, c := range []*client.Client{viewer, chosen} {
		st := c.Snapshot()
		if st.Permissions == nil || st.Permissions.Publish || !st.Permissions.Subscribe {
			t.Errorf("%s: welcome grants %+v, want subscribe without publish", st.ID, st.Permissions)
		}
		waitFor(t, c, "audience receives Pub", 10*time.Second, receiving(pubID))
	}
	waitFor(t, chosen, "forbidden for its publish offer", 10*time.Second, func(s *client.State) bool {
		for _, e := range s.Errors {
			if e.Code == signal.CodeForbidden && !e.Fatal && strings.Contains(e.Message, "audience") {
				return true
			}
		}
		return false
	})
	viewerID, chosenID := viewer.Snapshot().ID, chosen.Snapshot().ID
	waitFor(t, pub, "the roster marks both audience", 5*time.Second, func(s *client.State) bool {
		return s.Participants[viewerID].Audience && s.Participants[chosenID].Audience
	})
	if pub.Snapshot().Participants[pubID].Audience || viewer.Snapshot().Participants[pubID].Audience {
		t.Error("the publisher is marked audience")
	}

	r, ok := srv.Hub().Room("main")
	if !ok {
		t.Fatal("no room")
	}
	st, _ := r.Stats(time.Now())
	for _, p := range st.Participants {
		switch p.ID {
		case pubID:
			if p.Receiving != 0 || len(p.Forwarded) != 0 {
				t.Errorf("the publisher receives %d streams, videos of %v: it holds state for the audience", p.Receiving, p.Forwarded)
			}
		default:
			if len(p.Publishing) != 0 || p.Permissions.Publish {
				t.Errorf("audience %s publishes %d tracks (permissions %+v)", p.ID, len(p.Publishing), p.Permissions)
			}
			if p.Receiving != 2 {
				t.Errorf("audience %s receives %d streams, want Pub's audio and video", p.ID, p.Receiving)
			}
		}
	}
	if st.Tracks["audio"] != 1 || st.Tracks["video"] != 1 {
		t.Errorf("the room receives tracks %v, want only Pub's", st.Tracks)
	}
}
