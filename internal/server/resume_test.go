package server

import (
	"context"
	"crypto/tls"
	"net/http"
	"testing"
	"time"

	"github.com/podium-sfu/podium/internal/client"
	"github.com/podium-sfu/podium/internal/config"
	"github.com/podium-sfu/podium/internal/signal"
)

func redial(t *testing.T, s *Server, room, name string, resume signal.Resume) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, client.Options{URL: wsURL(s), Room: room, Name: name, Publish: true, Resume: &resume})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// A dropped connection (no close handshake) rejoins with its identity; media resumes.
func TestReconnectAfterDropKeepsIdentity(t *testing.T) {
	srv := startServer(t, Options{})
	a := dial(t, srv, "r", "A", true)
	b := dial(t, srv, "r", "B", true)
	aID, bID := a.Snapshot().ID, b.Snapshot().ID
	waitFor(t, b, "B receives A", 10*time.Second, receiving(aID))

	resume := a.Snapshot().Resume
	a.Close() // abrupt: no leave message
	waitFor(t, b, "B sees A leave", 3*time.Second, func(s *client.State) bool { _, ok := s.Participants[aID]; return !ok })

	start := time.Now()
	a2 := redial(t, srv, "r", "A", resume)
	if got := a2.Snapshot().ID; got != aID {
		t.Fatalf("resumed id = %q, want %q", got, aID)
	}
	waitFor(t, a2, "A receives B again", 5*time.Second, receiving(bID))
	waitFor(t, b, "B receives A again", 5*time.Second, func(s *client.State) bool {
		tr := s.Tracks["video-"+aID]
		return receiving(aID)(s) && tr.LastSeen.After(start)
	})
	t.Logf("media resumed %v after reconnecting", time.Since(start).Round(time.Millisecond))
}

// A resume while the old connection still looks alive replaces it: others keep one participant.
func TestResumeReplacesStaleSession(t *testing.T) {
	srv := startServer(t, Options{})
	a := dial(t, srv, "r", "A", true)
	b := dial(t, srv, "r", "B", true)
	aID := a.Snapshot().ID
	waitFor(t, b, "B receives A", 10*time.Second, receiving(aID))

	a2 := redial(t, srv, "r", "A", a.Snapshot().Resume)
	waitFor(t, a, "old session closed", 3*time.Second, func(s *client.State) bool { return s.Closed != nil })
	waitFor(t, b, "B receives the resumed A", 5*time.Second, receiving(aID))
	if n := len(b.Snapshot().Participants); n != 1 {
		t.Errorf("B sees %d participants, want 1", n)
	}
	_ = a2
}

func TestForgedResumeGetsANewIdentity(t *testing.T) {
	srv := startServer(t, Options{})
	a := dial(t, srv, "r", "A", false)
	forged := signal.Resume{ID: a.Snapshot().ID, Secret: "00112233445566778899aabbccddeeff"}
	other := redial(t, srv, "r", "Mallory", forged)
	if other.Snapshot().ID == a.Snapshot().ID {
		t.Fatal("a forged resume secret took over another participant's id")
	}
	if a.Snapshot().Closed != nil {
		t.Fatal("the victim was disconnected")
	}
}

func TestSelfSignedTLS(t *testing.T) {
	cfg := config.Default()
	cfg.HTTP, cfg.UDPPort, cfg.TCPPort, cfg.MediaIPs = "127.0.0.1:0", 0, 0, []string{"127.0.0.1"}
	cfg.TLSSelfSigned = true
	srv, err := New(cfg, Options{}, discardLog())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	defer func() { cancel(); <-done }()
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := hc.Get(srv.URL() + "healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.TLS == nil || len(resp.TLS.PeerCertificates) == 0 {
		t.Fatalf("status %d, tls %v", resp.StatusCode, resp.TLS)
	}
	if ips := resp.TLS.PeerCertificates[0].IPAddresses; len(ips) == 0 {
		t.Error("self-signed certificate names no IP address")
	}
}

// A resume is bound to the identity it was given to: Bob's token with Alice's
// resume id and secret joins as a new participant, and Alice stays; Alice's
// own token resumes.
func TestResumeNeedsTheSameIdentity(t *testing.T) {
	srv := startServerWith(t, Options{}, withKeys)
	exp := time.Now().Add(time.Hour)
	aliceTok, bobTok := mint(t, "r", "alice", pubSub, exp), mint(t, "r", "bob", pubSub, exp)
	alice := dialToken(t, srv, "r", "Alice", aliceTok, false)
	dialToken(t, srv, "r", "Bob", bobTok, false)
	aliceID, stolen := alice.Snapshot().ID, alice.Snapshot().Resume

	dial := func(token string) *client.Client {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, err := client.Dial(ctx, client.Options{URL: wsURL(srv), Room: "r", Name: "X", Token: token, Resume: &stolen})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}
	mallory := dial(bobTok)
	if got := mallory.Snapshot().ID; got == aliceID {
		t.Fatalf("bob's token with alice's resume secret took over alice's participant %s", aliceID)
	}
	r, _ := srv.hub.Room("r")
	if ps := r.Participants(); len(ps) != 3 || ps[0].ID != aliceID {
		t.Fatalf("participants %v, want alice (%s), bob and a new one", ps, aliceID)
	}
	if got := dial(aliceTok).Snapshot().ID; got != aliceID {
		t.Errorf("alice's own resume joined as %s, want %s", got, aliceID)
	}
}
