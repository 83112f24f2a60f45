package server

import (
	"encoding/json"
	"fmt"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/podium-sfu/podium/internal/algo/overload"
	"github.com/podium-sfu/podium/internal/cluster"
	"github.com/podium-sfu/podium/internal/signal"
)

// TestJoinsFollowARedirectBeforeTheDirectory: an entry node that sent a
// room's first participant to a bridge sends the next ones there too, before
// that bridge's room entry reaches the directory (placed.go). Three nodes:
// node0 (eu) is the entry, node1 and node2 serve us. Ann (us) is redirected to
// one us bridge; her join never completes, so the directory never lists the
// room. That bridge then gets busier than the other (three participants in
// other rooms, seen in node0's registry). Cleo (us) joining Ann's room must be
// sent to Ann's bridge anyway: without the memory node0 runs the initial
// selection again and splits the call onto the idler bridge, as
// TestFailoverSIGKILL once saw on a loaded CI box (there the bridges' CPU
// readings changed their order).
func TestJoinsFollowARedirectBeforeTheDirectory(t *testing.T) {
	// The nodes share this process's CPU: each publishes the same fixed load
	// instead (startServerWith's), so only the participants tell the bridges apart.
	nodes := startClusterOf(t, "eu", "us", "us")
	awaitRegistries(t, 15*time.Second, nodes...)
	entry := wsURL(nodes[0]) + "?region=us"
	redirect := func(name string) signal.Redirect {
		t.Helper()
		typ, frame := joinProbe(t, entry, "quick", name)
		var rd signal.Redirect
		if err := json.Unmarshal(frame, &rd); typ != signal.TypeRedirect || err != nil {
			t.Fatalf("%s (us) at the eu node got %s %s; want a redirect to a us bridge", name, typ, frame)
		}
		return rd
	}
	ann := redirect("Ann")
	var busy *Server
	for _, n := range nodes[1:] {
		if n.Node().ID() == ann.Node {
			busy = n
		}
	}
	if busy == nil {
		t.Fatalf("Ann sent to %q, not a us bridge", ann.Node)
	}
	for i := range 3 {
		dialURL(t, wsURL(busy)+"?bridge="+ann.Node, fmt.Sprintf("other%d", i), fmt.Sprintf("P%d", i))
	}
	within(t, 15*time.Second, "node0's registry shows Ann's bridge the busier", func() bool {
		for _, n := range nodes[0].Node().Nodes(time.Now()) {
			if n.ID == ann.Node {
				return n.Load.Participants == 3
			}
		}
		return false
	})
	if got := nodes[0].Node().Bridges("quick", time.Now()); len(got) != 0 {
		t.Fatalf("the directory lists %v for a room nobody joined", got)
	}
	cleo := redirect("Cleo")
	t.Logf("ann %+v cleo %+v nodes %+v", ann, cleo, nodes[0].Node().Nodes(time.Now()))
	if cleo.Node != ann.Node {
		t.Fatalf("Cleo sent to %s (%s), Ann to %s: want one bridge", cleo.Node, cleo.Reason, ann.Node)
	}
}

// TestBusyBridgeSendsJoinsElsewhere: a bridge whose overload protection
// refuses joins (docs/scale.md, Overload) says so in the registry, and joins
// for its conferences go to another bridge instead of being refused while
// one has room. Two us nodes; Ann opens a room on node0; node0's CPU then
// reads 100 % until it refuses joins. Bob, reaching node0 for Ann's room, is
// redirected to node1 (without the change node0 keeps the conference's join
// and refuses it: server-busy); node1 sees node0 busy and does not send Cleo
// there either. Ann, reconnecting with her resume, is still taken back.
func TestBusyBridgeSendsJoinsElsewhere(t *testing.T) {
	var cpu0 atomic.Uint64
	cpu0.Store(math.Float64bits(0.1))
	timing := overload.Config{DownWait: 200 * time.Millisecond, UpWait: time.Minute}
	nodes := startClusterWith(t, func(i int, o *Options) {
		if i == 0 {
			o.CPU = func(time.Time) float64 { return math.Float64frombits(cpu0.Load()) }
			o.OverloadInterval, o.OverloadTiming = 100*time.Millisecond, &timing
		}
	}, "us", "us")
	awaitRegistries(t, 15*time.Second, nodes...)
	n0, n1 := nodes[0], nodes[1]
	ann := dialURL(t, wsURL(n0)+"?bridge=node0", "crowded", "Ann")
	cpu0.Store(math.Float64bits(1))
	within(t, 20*time.Second, "node0 refuses joins and node1's registry says so", func() bool {
		for _, n := range n1.Node().Nodes(time.Now()) {
			if n.ID == "node0" {
				return n0.hub.Busy() && n.Load.Busy
			}
		}
		return false
	})
	typ, frame := joinProbe(t, wsURL(n0), "crowded", "Bob")
	var rd signal.Redirect
	if err := json.Unmarshal(frame, &rd); typ != signal.TypeRedirect || err != nil || rd.Node != "node1" {
		t.Fatalf("Bob at the busy node0 got %s %s; want a redirect to node1", typ, frame)
	}
	if typ, frame := joinProbe(t, wsURL(n1), "crowded", "Cleo"); typ == signal.TypeRedirect || typ == signal.TypeError {
		t.Fatalf("Cleo at node1 got %s %s; want to be served there", typ, frame)
	}
	if got := n0.place("crowded", "us", "", "", true); got != nil {
		t.Fatalf("a resume at the busy node0 is sent to %s; want it taken back", got.Node)
	}
	if c, _ := cluster.Select(cluster.Selection{Region: "us", Nodes: n1.Node().Nodes(time.Now()), Conference: []string{"node0"}}); c.Node != "node1" {
		t.Fatalf("node1 would place a join of Ann's room on %s", c.Node)
	}
	_ = ann
}
