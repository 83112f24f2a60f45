package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/podium-sfu/podium/internal/client"
	"github.com/podium-sfu/podium/internal/config"
	"github.com/podium-sfu/podium/internal/signal"
)

// startClusterOf runs one podium server per region, their embedded NATS
// servers routed to each other over loopback (as --cluster-listen and
// --cluster-peers make them), with a fast heartbeat.
func startClusterOf(t *testing.T, regions ...string) []*Server {
	t.Helper()
	return startClusterWith(t, func(int, *Options) {}, regions...)
}

// startClusterWith is startClusterOf with node i's Options changed by opt.
func startClusterWith(t *testing.T, opt func(i int, o *Options), regions ...string) []*Server {
	t.Helper()
	return startClusterConfigured(t, opt, func(int, *config.Config) {}, regions...)
}

// startClusterConfigured is startClusterWith with node i's configuration
// also changed, by conf.
func startClusterConfigured(t *testing.T, opt func(i int, o *Options), conf func(i int, c *config.Config), regions ...string) []*Server {
	t.Helper()
	var ports []string
	for range regions {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ports = append(ports, ln.Addr().String())
		_ = ln.Close()
	}
	var peers []string
	for _, p := range ports {
		peers = append(peers, "nats://"+p)
	}
	out := make([]*Server, len(regions))
	for i, region := range regions {
		opts := Options{NodeID: fmt.Sprintf("node%d", i), ClusterHeartbeat: 200 * time.Millisecond, ClusterTTL: 1500 * time.Millisecond}
		opt(i, &opts)
		out[i] = startServerWith(t, opts,
			func(c *config.Config) {
				c.Region, c.ClusterListen, c.ClusterPeers = region, ports[i], peers
				c.JoinsPerIP = 0
				conf(i, c)
			})
	}
	for _, s := range out {
		select {
		case <-s.Node().Ready():
		case <-time.After(45 * time.Second):
			t.Fatalf("%s: the cluster's JetStream is not ready after 45s", s.Node().ID())
		}
	}
	return out
}

// within polls cond until it holds or the deadline passes.
func within(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", d, what)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// joinRaw sends a join on a plain WebSocket to url and returns the first message.
func joinProbe(t *testing.T, wsurl, room, name string) (string, json.RawMessage) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, wsurl, nil)
	if err != nil {
		t.Fatalf("dial %s: %v", wsurl, err)
	}
	defer conn.CloseNow()
	join, _ := json.Marshal(map[string]any{"type": "join", "version": signal.Version, "room": room, "name": name})
	if err := conn.Write(ctx, websocket.MessageText, join); err != nil {
		t.Fatal(err)
	}
	_, frame, err := conn.Read(ctx)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	var head struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(frame, &head)
	if head.Type == signal.TypeRedirect { // the server closes right after
		if _, _, err := conn.Read(ctx); websocket.CloseStatus(err) != websocket.StatusNormalClosure {
			t.Errorf("after a redirect: %v, want a normal closure", err)
		}
	}
	return head.Type, frame
}

func getJSON(t *testing.T, u string, v any) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", u, resp.StatusCode, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("GET %s: %v: %s", u, err, b)
	}
}

func TestClusterOfThreeNodes(t *testing.T) {
	start := time.Now()
	nodes := startClusterOf(t, "us", "us", "eu")
	us0, us1, eu := nodes[0], nodes[1], nodes[2]
	t.Logf("3 nodes ready after %v", time.Since(start))
	awaitRegistries(t, 10*time.Second, nodes...)
	t.Logf("registry converged after %v", time.Since(start))

	// Ann joins through us1: the room has no bridge yet, so the least loaded
	// node in her region serves her (us1 itself, or us0 by a redirect).
	annURL := wsURL(us1)
	var rd signal.Redirect
	if typ, frame := joinProbe(t, annURL, "standup", "probe"); typ == signal.TypeRedirect {
		if err := json.Unmarshal(frame, &rd); err != nil || rd.Region != "us" || rd.Reason != "initial-least-loaded-in-region" {
			t.Fatalf("first join at us1: %s", frame)
		}
		annURL = rd.URL
	} else {
		// Served at us1: pin Ann there, or the load that moved since the probe
		// may send her real join elsewhere (a redirect where a welcome is awaited).
		annURL += "?bridge=node1"
	}
	annNode, annServer := "node1", us1
	if strings.Contains(annURL, "bridge=node0") {
		annNode, annServer = "node0", us0
	}
	otherUS := us0
	if annServer == us0 {
		otherUS = us1
	}
	ann := dialURL(t, annURL, "standup", "Ann")
	annID := ann.Snapshot().ID
	within(t, 5*time.Second, "the directory shows standup on Ann's node at every node", func() bool {
		for _, s := range nodes {
			if b := s.Node().Bridges("standup", time.Now()); len(b) != 1 || b[0].Node != annNode || b[0].Participants != 1 {
				return false
			}
		}
		return true
	})

	// Bob, also in us, reaches the other us node: redirected to the conference's bridge.
	typ, frame := joinProbe(t, wsURL(otherUS), "standup", "Bob")
	if err := json.Unmarshal(frame, &rd); typ != signal.TypeRedirect || err != nil {
		t.Fatalf("Bob at us1 got %s (%s), want a redirect", typ, frame)
	}
	if rd.Node != annNode || rd.Region != "us" || rd.Reason != "conference-bridge-in-region" {
		t.Fatalf("redirect %+v", rd)
	}
	u, _ := url.Parse(rd.URL)
	if want := strings.TrimPrefix(strings.TrimSuffix(annServer.URL(), "/"), "http://"); u.Host != want || u.Query().Get("bridge") != annNode {
		t.Fatalf("redirect to %s, want %s at %s", rd.URL, annNode, want)
	}
	bob := dialURL(t, rd.URL, "standup", "Bob")
	waitFor(t, bob, "Bob, redirected, is in Ann's room and receives her", 20*time.Second, receiving(annID))

	// Cleo reaches a us node too but says she is in eu: the room has no bridge
	// in eu, so Algorithm 3 opens one there (eu, the only eu node).
	typ, frame = joinProbe(t, wsURL(otherUS)+"?region=eu", "standup", "probe")
	if err := json.Unmarshal(frame, &rd); typ != signal.TypeRedirect || err != nil || rd.Node != "node2" || rd.Reason != "least-loaded-in-region" {
		t.Fatalf("an eu participant at us1: %s %s", typ, frame)
	}
	cleo := dialURL(t, rd.URL, "standup", "Cleo")
	cleoID := cleo.Snapshot().ID

	// The admin API of the other us node, which serves nobody, lists all three with their bridges.
	within(t, 10*time.Second, "the admin API of a node serving nobody lists Ann and Bob on Ann's node and Cleo on node2", func() bool {
		var got struct {
			Participants []struct{ ID, Name, Node string }
			Bridges      []struct {
				Node         string
				Participants int
				Error        string
			}
		}
		getJSON(t, otherUS.URL()+"api/v1/rooms/standup/participants", &got)
		where := map[string]string{}
		for _, p := range got.Participants {
			where[p.Name] = p.Node
		}
		return len(got.Participants) == 3 && where["Ann"] == annNode && where["Bob"] == annNode && where["Cleo"] == "node2"
	})
	var eulist struct{ Participants []struct{ ID, Node string } }
	getJSON(t, eu.URL()+"api/v1/rooms/standup/participants", &eulist)
	if len(eulist.Participants) != 3 || eulist.Participants[0].ID != cleoID || eulist.Participants[0].Node != "node2" {
		t.Fatalf("eu's admin API, its own participant first: %+v", eulist.Participants)
	}

	// The room's details, at a node serving nobody and at a bridge, list every bridge's participants too.
	for _, n := range []*Server{otherUS, eu} {
		var room struct {
			Participants []struct{ Name, Node string }
			Bridges      []struct{ Node string }
		}
		getJSON(t, n.URL()+"api/v1/rooms/standup", &room)
		if len(room.Participants) != 3 || len(room.Bridges) != 2 {
			t.Fatalf("GET /rooms/standup at %s: %d participants over %d bridges, want 3 over 2: %+v", n.URL(), len(room.Participants), len(room.Bridges), room)
		}
	}

	// /metrics: the cluster gauges.
	resp, err := http.Get(annServer.URL() + "metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"podium_cluster_nodes 3", "podium_cluster_rooms 1", "podium_cluster_rooms_served 1"} {
		if !strings.Contains(string(body), want+"\n") {
			t.Errorf("%s /metrics lacks %q", annNode, want)
		}
	}

	// eu dies without a word: the others drop it from the registry within the TTL.
	killed := time.Now()
	eu.Node().Crash()
	within(t, 10*time.Second, "eu is no longer a healthy node at us0 and us1", func() bool {
		if time.Since(killed) > 9*time.Second {
			t.Logf("us0 sees %+v", us0.Node().Nodes(time.Now()))
		}
		return us0.Node().HealthyNodes(time.Now()) == 2 && us1.Node().HealthyNodes(time.Now()) == 2
	})
	t.Logf("the dead node left the registry after %v", time.Since(killed))
	if b := us0.Node().Bridges("standup", time.Now()); len(b) != 1 || b[0].Node != annNode {
		t.Fatalf("standup's bridges after eu died: %+v", b)
	}
	// A new eu participant, with no eu node left, joins the room's bridge
	// rather than a second bridge no nearer to her.
	typ, frame = joinProbe(t, wsURL(otherUS)+"?region=eu", "standup", "probe")
	if err := json.Unmarshal(frame, &rd); typ != signal.TypeRedirect || err != nil || rd.Node != annNode || rd.Reason != "conference-bridge-no-region" {
		t.Fatalf("an eu participant after eu died: %s %s", typ, frame)
	}
}

// dialURL joins a room through a full signaling URL (a redirect's).
func dialURL(t *testing.T, u, room, name string) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, client.Options{URL: u, Room: room, Name: name, Publish: true})
	if err != nil {
		t.Fatalf("%s joins %s at %s: %v", name, room, u, err)
	}
	t.Cleanup(c.Close)
	return c
}

// awaitRegistries waits until every node's registry lists all of them healthy.
func awaitRegistries(t *testing.T, d time.Duration, nodes ...*Server) {
	t.Helper()
	within(t, d, fmt.Sprintf("every registry lists the %d nodes", len(nodes)), func() bool {
		for _, n := range nodes {
			if n.Node().HealthyNodes(time.Now()) != len(nodes) {
				return false
			}
		}
		return true
	})
}
