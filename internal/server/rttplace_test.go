package server

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/podium-sfu/podium/internal/cluster"
	"github.com/podium-sfu/podium/internal/netem"
	"github.com/podium-sfu/podium/internal/signal"
)

// TestPlacementByMeasuredRTT: bridge selection in the running system uses the
// RTTs the nodes measured (docs/cluster.md, Where the RTTs come from). Two
// nodes, us (node0) and eu (node1), with the relay; an emulated path in front
// of node1's relay holds every datagram to it 150 ms, so the relay probes
// measure about 150 ms between the bridges. Ann (us) opens a room on node0;
// Eve (eu) joins it there by ?bridge= (as a redirect sends a participant), so
// node0 publishes a figure for eu participants; Dan (eu), in another room on
// node1, gives node1 its figure. Bob (eu) then joins Ann's room at node1:
// Algorithm 3 would split the conference and serve him there
// (least-loaded-in-region); with the measured RTTs — a few ms to either
// bridge on loopback, 150 ms between them — he is sent to Ann's bridge
// (keep-conference-bridge).
func TestPlacementByMeasuredRTT(t *testing.T) {
	nodes := startRelayCluster(t, "us", "eu")
	n0, n1 := nodes[0], nodes[1]
	awaitRegistries(t, 15*time.Second, n0, n1)
	path, err := netem.StartRelay(netem.RelayConfig{Listen: "127.0.0.1:0", Target: netipLoopback(n1.Relay().Addr()).String(),
		Up: netem.Config{Delay: 150 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer path.Close()
	n1.Cascade().SetAddr(path.Addr().AddrPort())

	dialURL(t, wsURL(n0)+"?bridge=node0", "far", "Ann")
	dialURL(t, wsURL(n0)+"?bridge=node0&region=eu", "far", "Eve")
	dialURL(t, wsURL(n1)+"?bridge=node1", "near", "Dan")

	// What node1, where Bob arrives, knows: both bridges' figures for eu
	// participants, the bridges' RTT from the probes (smoothed, it climbs
	// from the loopback RTT measured before the path was put in), Ann's
	// room on node0.
	var view []cluster.NodeInfo
	within(t, 20*time.Second, "node1's registry holds the measured RTTs and Ann's room", func() bool {
		view = n1.Node().Nodes(time.Now())
		eu := cluster.ClientRTTFor(view, "eu")
		rtt, ok := cluster.BridgeRTTs(view)("node0", "node1")
		bridges := n1.Node().Bridges("far", time.Now())
		return len(eu) == 2 && ok && rtt >= 100 && len(bridges) == 1 && bridges[0].Participants == 2
	})
	rtt, _ := cluster.BridgeRTTs(view)("node0", "node1")
	eu := cluster.ClientRTTFor(view, "eu")
	t.Logf("measured: node0↔node1 %.1f ms over the relay; eu participants' RTT to node0 %.2f ms, to node1 %.2f ms", rtt, eu["node0"], eu["node1"])
	if rtt > 1000 {
		t.Errorf("relay RTT %.1f ms behind a 150 ms path", rtt)
	}
	if eu["node0"] >= 50 || eu["node1"] >= 50 {
		t.Errorf("eu participants' RTTs on loopback: %v", eu)
	}
	if c, _ := cluster.Select(cluster.Selection{Region: "eu", Nodes: view, Conference: []string{"node0"}}); c.Node != "node1" {
		t.Fatalf("Algorithm 3 chooses %+v; the test needs it to split onto node1", c)
	}

	typ, frame := joinProbe(t, wsURL(n1), "far", "Bob")
	var rd signal.Redirect
	if err := json.Unmarshal(frame, &rd); typ != signal.TypeRedirect || err != nil || rd.Node != "node0" || rd.Reason != string(cluster.ReasonKeepOneBridge) {
		t.Fatalf("Bob (eu) at node1 got %s %s; want a redirect to node0 (keep-conference-bridge)", typ, frame)
	}
}

// TestRedirectedJoinGivesItsRTT: a join that its entry node sends elsewhere
// still tells that node the client's RTT (a WebSocket ping, which clients
// answer by themselves), so a node learns the RTTs of the regions whose
// clients reach it, not only of those it serves. Zoe (eu) opens a room at the
// us node, which redirects her to the eu node; the us node then publishes a
// figure for eu clients.
func TestRedirectedJoinGivesItsRTT(t *testing.T) {
	nodes := startClusterOf(t, "us", "eu")
	n0 := nodes[0]
	awaitRegistries(t, 15*time.Second, n0, nodes[1])
	typ, frame := joinProbe(t, wsURL(n0)+"?region=eu", "fresh", "Zoe")
	var rd signal.Redirect
	if err := json.Unmarshal(frame, &rd); typ != signal.TypeRedirect || err != nil || rd.Node != "node1" {
		t.Fatalf("Zoe (eu) at the us node got %s %s; want a redirect to node1", typ, frame)
	}
	within(t, 10*time.Second, "the us node publishes eu clients' RTT to it", func() bool {
		for _, n := range n0.Node().Nodes(time.Now()) {
			if f := n.ClientRTT["eu"]; n.ID == "node0" && f.N == 1 && f.MS > 0 && f.MS < 1000 {
				return true
			}
		}
		return false
	})
}
