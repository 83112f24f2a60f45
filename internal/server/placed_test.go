package server

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

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
	// instead, so only the participants tell the bridges apart.
	nodes := startClusterWith(t, func(o *Options) { o.CPU = func(time.Time) float64 { return 0.1 } }, "eu", "us", "us")
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
