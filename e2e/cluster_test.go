package e2e

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/podium-sfu/podium/internal/config"
	"github.com/podium-sfu/podium/internal/server"
	"github.com/podium-sfu/podium/web"
)

// startRelayNodes runs one server per region, clustered (startNodes), with
// the relay between them (--relay-port).
func startRelayNodes(t *testing.T, regions ...string) []*server.Server {
	t.Helper()
	return startNodes(t, regions, true, false)
}

// startNodes runs a server per entry of regions, their embedded NATS servers
// routed over loopback, each with a relay port when withRelay, and waits
// until every node sees all the others. With byName each node's --public-url
// names it http://localhost:<port>/ (it listens on 127.0.0.1:<port>): what
// the cluster tells browsers differs from the address it serves at.
func startNodes(t *testing.T, regions []string, withRelay, byName bool) []*server.Server {
	t.Helper()
	if !web.Built() {
		t.Fatal("web client not built: run `make web`")
	}
	var routes, peers []string
	for range regions {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		routes = append(routes, ln.Addr().String())
		peers = append(peers, "nats://"+ln.Addr().String())
		_ = ln.Close()
	}
	var out []*server.Server
	for i, region := range regions {
		cfg := config.Default()
		cfg.HTTP, cfg.UDPPort, cfg.TCPPort, cfg.MediaIPs, cfg.P2P = "127.0.0.1:0", 0, 0, []string{"127.0.0.1"}, false
		cfg.Region, cfg.ClusterListen, cfg.ClusterPeers = region, routes[i], peers
		if byName {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			port := ln.Addr().(*net.TCPAddr).Port
			_ = ln.Close()
			cfg.HTTP, cfg.PublicURL = fmt.Sprintf("127.0.0.1:%d", port), fmt.Sprintf("http://localhost:%d/", port)
		}
		if withRelay {
			udp, err := net.ListenPacket("udp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			cfg.RelayPort = udp.LocalAddr().(*net.UDPAddr).Port
			_ = udp.Close()
		}
		var logOut io.Writer = io.Discard
		if os.Getenv("PODIUM_TEST_LOG") != "" {
			logOut = os.Stderr
		}
		srv, err := server.New(cfg, server.Options{Client: web.Files(), NodeID: fmt.Sprintf("node%d", i),
			ClusterHeartbeat: 250 * time.Millisecond, ClusterTTL: 2 * time.Second}, slog.New(slog.NewTextHandler(logOut, nil)))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- srv.Serve(ctx) }()
		t.Cleanup(func() { cancel(); <-done })
		out = append(out, srv)
	}
	for _, s := range out {
		select {
		case <-s.Node().Ready():
		case <-time.After(45 * time.Second):
			t.Fatalf("%s: cluster not ready after 45s", s.Node().ID())
		}
	}
	within(t, "the nodes see each other", 10*time.Second, func() (bool, string) {
		for _, s := range out {
			if got := s.Node().HealthyNodes(time.Now()); got != len(out) {
				return false, fmt.Sprintf("%s sees %d nodes", s.Node().ID(), got)
			}
		}
		return true, ""
	})
	return out
}

// TestClusterRedirectInTheBrowser: Bob opens the room on the node that is not
// the room's bridge; the web client follows the redirect to the bridge (a
// WebSocket to another origin: CSP and origin checks allow the cluster's
// nodes), and Ann and Bob see each other. The nodes listen on 127.0.0.1 and
// their --public-url names them localhost, where the pages are opened: the
// redirect must carry the public URL (127.0.0.1 would be another origin,
// which the bridge's origin check refuses).
func TestClusterRedirectInTheBrowser(t *testing.T) {
	nodes := startNodes(t, []string{"us", "us"}, false, true)
	public := func(s *server.Server) string { return strings.Replace(s.URL(), "//127.0.0.1:", "//localhost:", 1) }
	ann := launch(t, "Ann", camera(t, red, 320, 180))
	ann.open(public(nodes[0]) + "cascade?video=320x180&name=Ann")
	within(t, "Ann joined", 20*time.Second, func() (bool, string) { return ann.id() != "", "no participant id" })
	bridge, other := nodes[0], nodes[1]
	if _, ok := bridge.Hub().Room("cascade"); !ok {
		bridge, other = nodes[1], nodes[0] // Ann herself was sent to the less loaded node
	}
	within(t, "the room is in the other node's directory", 10*time.Second, func() (bool, string) {
		b := other.Node().Bridges("cascade", time.Now())
		return len(b) == 1 && b[0].Node == bridge.Node().ID(), fmt.Sprintf("bridges %+v", b)
	})

	bob := launch(t, "Bob", camera(t, green, 320, 180))
	bob.open(public(other) + "cascade?video=320x180&name=Bob")
	within(t, "Bob, redirected, joined on the bridge", 20*time.Second, func() (bool, string) {
		r, ok := bridge.Hub().Room("cascade")
		return bob.id() != "" && ok && len(r.Participants()) == 2, "Bob not on the bridge yet"
	})
	if _, ok := other.Hub().Room("cascade"); ok {
		t.Errorf("the entry node serves the room too")
	}
	// Bob's page stayed where it was opened; its signaling went where the
	// redirect said (the conference's own record of it).
	var href, signaling string
	if err := bob.eval(`location.href`, &href); err != nil || !strings.HasPrefix(href, public(other)) {
		t.Errorf("Bob's page is at %q (%v), want %s, where it was opened", href, err, public(other))
	}
	want := "ws" + strings.TrimPrefix(public(bridge), "http") + "ws?"
	if err := bob.eval(`window.podium.conference.redirectUrl`, &signaling); err != nil || !strings.HasPrefix(signaling, want) {
		t.Errorf("Bob's signaling went to %q (%v), want the bridge's public URL %s…", signaling, err, want)
	}
	annWho, bobWho := who{Name: "Ann", ID: ann.id(), Colour: red}, who{Name: "Bob", ID: bob.id(), Colour: green}
	within(t, "Ann's tile of Bob shows Bob", 20*time.Second, func() (bool, string) { return showsWho(ann, bobWho) })
	within(t, "Bob's tile of Ann shows Ann", 20*time.Second, func() (bool, string) { return showsWho(bob, annWho) })
}
