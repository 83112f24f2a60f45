package server

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/podium-sfu/podium/internal/client"
	"github.com/podium-sfu/podium/internal/config"
	"github.com/podium-sfu/podium/internal/netem"
	"github.com/podium-sfu/podium/internal/relay"
)

// freeUDPPort is a UDP port free a moment ago on loopback.
func freeUDPPort(t *testing.T) int {
	t.Helper()
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}

// startRelayCluster is startClusterOf with the relay on (--relay-port).
func startRelayCluster(t *testing.T, regions ...string) []*Server {
	t.Helper()
	return startRelayClusterWith(t, func(*config.Config) {}, regions...)
}

func startRelayClusterWith(t *testing.T, change func(*config.Config), regions ...string) []*Server {
	t.Helper()
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
	out := make([]*Server, len(regions))
	for i, region := range regions {
		out[i] = startServerWith(t, Options{NodeID: fmt.Sprintf("node%d", i), ClusterHeartbeat: 200 * time.Millisecond, ClusterTTL: 1500 * time.Millisecond},
			func(c *config.Config) {
				c.Region, c.ClusterListen, c.ClusterPeers = region, routes[i], peers
				c.RelayPort = freeUDPPort(t)
				c.JoinsPerIP = 0
				change(c)
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

// TestRelayBetweenTwoNodes: Ann is served by node0, Bob by node1 (each pinned
// with ?bridge=), in one room. Each sees the other as a participant and
// receives the other's audio and video over the relay: node1 asks node0 for
// Ann's streams and the other way round. A forged and a replayed datagram
// are dropped and counted; after a key rotation media still flows with no
// datagram refused for an unknown key.
func TestRelayBetweenTwoNodes(t *testing.T) {
	start := time.Now()
	nodes := startRelayCluster(t, "us", "eu")
	n0, n1 := nodes[0], nodes[1]
	awaitRegistries(t, 10*time.Second, n0, n1)
	t.Logf("cluster ready after %v", time.Since(start))

	ann := dialURL(t, wsURL(n0)+"?bridge=node0", "relay", "Ann")
	bob := dialURL(t, wsURL(n1)+"?bridge=node1", "relay", "Bob")
	ann.SetSpeaking(true)
	annID, bobID := ann.Snapshot().ID, bob.Snapshot().ID
	if _, ok := n0.Hub().Room("relay"); !ok {
		t.Fatal("node0 does not serve Ann")
	}
	if _, ok := n1.Hub().Room("relay"); !ok {
		t.Fatal("node1 does not serve Bob")
	}
	knows := func(id string) func(*client.State) bool {
		return func(s *client.State) bool { _, ok := s.Participants[id]; return ok }
	}
	waitFor(t, bob, "Bob, on node1, is told of Ann on node0", 10*time.Second, knows(annID))
	waitFor(t, ann, "Ann, on node0, is told of Bob on node1", 10*time.Second, knows(bobID))
	t.Logf("participants announced across bridges after %v", time.Since(start))
	waitFor(t, bob, "Bob receives Ann's audio and video over the relay", 20*time.Second, receiving(annID))
	waitFor(t, ann, "Ann receives Bob's audio and video over the relay", 20*time.Second, receiving(bobID))
	t.Logf("media across the relay after %v", time.Since(start))
	for _, s := range nodes {
		st := s.Relay().Stats()
		if st.Received.Load() == 0 || st.Sent.Load() == 0 {
			t.Fatalf("%s: relay sent %d, accepted %d", s.Node().ID(), st.Sent.Load(), st.Received.Load())
		}
		if cs := s.Cascade().Stats(); cs.RemoteParticipants != 1 || cs.RelayedOut < 2 || cs.RelayedIn < 2 {
			t.Fatalf("%s: cascade %+v", s.Node().ID(), cs)
		}
	}

	// Sender reports cross too (receivers' lip sync).
	within(t, 10*time.Second, "sender reports relayed both ways", func() bool {
		return n0.Cascade().Stats().Reports > 0 && n1.Cascade().Stats().Reports > 0
	})

	// A forged and a replayed datagram, sent to node1 as node0 would.
	to := n1.Relay().Addr()
	to = netipLoopback(to)
	d, err := n0.Relay().Keyring().Seal(time.Now(), make([]byte, relay.MaxDatagram), relay.KindMedia, 1, []byte("not a stream"))
	if err != nil {
		t.Fatal(err)
	}
	forged := bytes.Clone(d)
	forged[relay.HeaderLen+2] ^= 1
	st1 := n1.Relay().Stats()
	forgedBefore, replayedBefore := st1.Dropped[relay.Forged].Load(), st1.Dropped[relay.Replayed].Load()
	_ = n0.Relay().SendRaw(to, forged)
	_ = n0.Relay().SendRaw(to, d)
	_ = n0.Relay().SendRaw(to, d)
	within(t, 2*time.Second, "node1 drops the forged and the replayed datagram", func() bool {
		return st1.Dropped[relay.Forged].Load() == forgedBefore+1 && st1.Dropped[relay.Replayed].Load() == replayedBefore+1
	})
	m := scrape(t, n1)
	for _, name := range []string{`podium_relay_dropped_total{reason="forged"}`, `podium_relay_dropped_total{reason="replayed"}`} {
		if m[name] != 1 {
			t.Errorf("node1 /metrics: %s %v, want 1", name, m[name])
		}
	}

	// A rotation on demand: announced, used after the lead, no drops.
	unknownBefore := st1.Dropped[relay.UnknownKey].Load()
	old := n0.Relay().Keyring().Keys(time.Now())[0].ID
	n0.RotateRelayKey()
	within(t, 10*time.Second, "node0 seals under its new key", func() bool {
		return n0.Relay().Keyring().Keys(time.Now())[0].ID != old
	})
	accepted := st1.Received.Load()
	within(t, 5*time.Second, "node1 accepts datagrams under node0's new key", func() bool {
		return st1.Received.Load() > accepted+50
	})
	waitFor(t, bob, "Bob still receives Ann after the rotation", 5*time.Second, receiving(annID))
	if n := st1.Dropped[relay.UnknownKey].Load() - unknownBefore; n != 0 {
		t.Errorf("%d datagrams refused for an unknown key across the rotation", n)
	}
	if got := scrape(t, n0)["podium_relay_key_rotations_total"]; got != 1 {
		t.Errorf("node0 /metrics counts %v rotations, want 1", got)
	}
}

// netipLoopback turns a wildcard listen address into loopback.
func netipLoopback(a netip.AddrPort) netip.AddrPort {
	if a.Addr().IsUnspecified() {
		return netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), a.Port())
	}
	return a
}

// TestRelayRepairsLoss: 5 % of the datagrams from node0 to node1 are lost on
// an emulated path (internal/netem) in front of node1's relay socket; node1
// NACKs the gaps over the relay and node0 answers from Ann's packet store, so
// Bob, on node1, misses (almost) none of Ann's video packets.
func TestRelayRepairsLoss(t *testing.T) {
	nodes := startRelayCluster(t, "us", "eu")
	n0, n1 := nodes[0], nodes[1]
	awaitRegistries(t, 10*time.Second, n0, n1)
	path, err := netem.StartRelay(netem.RelayConfig{Listen: "127.0.0.1:0", Target: netipLoopback(n1.Relay().Addr()).String(),
		Up: netem.Config{Loss: 0.05}, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	defer path.Close()
	n1.Cascade().SetAddr(path.Addr().AddrPort())

	ann := dialURL(t, wsURL(n0)+"?bridge=node0", "lossy", "Ann")
	bob := dialURL(t, wsURL(n1)+"?bridge=node1", "lossy", "Bob")
	annID := ann.Snapshot().ID
	waitFor(t, bob, "Bob receives Ann over the lossy relay", 20*time.Second, receiving(annID))
	video := func() (received, expected int) {
		tr := bob.Snapshot().Tracks["video-"+annID]
		return tr.Packets, tr.Expected()
	}
	r0, e0 := video()
	lost0 := path.Stats().Up.Lost
	time.Sleep(8 * time.Second) // the measurement's span: real media, real time
	r1, e1 := video()
	lostOnPath := path.Stats().Up.Lost - lost0
	received, expected := r1-r0, e1-e0
	missed := expected - received
	t.Logf("8 s: the path lost %d datagrams (%.1f %%); Bob received %d of %d video packets (%d missed)",
		lostOnPath, 100*float64(lostOnPath)/float64(path.Stats().Up.Delivered+path.Stats().Up.Lost), received, expected, missed)
	if lostOnPath < 10 || expected < 100 {
		t.Fatalf("too little to judge: %d lost on the path, %d video packets expected", lostOnPath, expected)
	}
	if missed*100 > expected { // unrepaired: ~5 %; one NACK round: ~0.25 %
		t.Errorf("Bob missed %d of %d video packets (%.1f %%) behind a 5 %% lossy relay hop", missed, expected, 100*float64(missed)/float64(expected))
	}
}

// TestRelayLastNBetweenBridges: with Last N = 1, Bob on node1 receives one
// video of Ann's and Cleo's, both on node0, so node0 relays node1 their two
// audio streams and exactly one video stream — not both.
func TestRelayLastNBetweenBridges(t *testing.T) {
	nodes := startRelayClusterWith(t, func(c *config.Config) { c.LastN = 1 }, "us", "eu")
	n0, n1 := nodes[0], nodes[1]
	awaitRegistries(t, 10*time.Second, n0, n1)
	ann := dialURL(t, wsURL(n0)+"?bridge=node0", "lastn", "Ann")
	cleo := dialURL(t, wsURL(n0)+"?bridge=node0", "lastn", "Cleo")
	bob := dialURL(t, wsURL(n1)+"?bridge=node1", "lastn", "Bob")
	annID, cleoID := ann.Snapshot().ID, cleo.Snapshot().ID
	videos := func(s *client.State) (live []string) {
		for _, id := range []string{annID, cleoID} {
			if tr := s.Tracks["video-"+id]; tr != nil && time.Since(tr.LastSeen) < 500*time.Millisecond {
				live = append(live, id)
			}
		}
		return live
	}
	waitFor(t, bob, "Bob receives exactly one of Ann's and Cleo's videos", 20*time.Second, func(s *client.State) bool {
		return len(videos(s)) == 1
	})
	within(t, 5*time.Second, "node0 relays node1 two audio streams and one video stream", func() bool {
		return n0.Cascade().Stats().RelayedOut == 3
	})
	time.Sleep(2 * time.Second) // and keeps it so
	if got := n0.Cascade().Stats().RelayedOut; got != 3 {
		t.Errorf("node0 relays %d streams to node1, want 3 (2 audio, 1 video)", got)
	}
	if st := bob.Snapshot(); len(videos(&st)) != 1 {
		live := videos(&st)
		t.Errorf("Bob receives video of %v, want one", live)
	}
}
