package server

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/podium-sfu/podium/internal/client"
	"github.com/podium-sfu/podium/internal/cluster"
)

// TestSpeakerWriter: the bridge serving the room longest writes its speaker
// order, then the lower node id; a draining one only when no other is left;
// a bridge counts itself before its entry is in the directory.
func TestSpeakerWriter(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	entries := func(kv ...any) []cluster.RoomEntry {
		var out []cluster.RoomEntry
		for i := 0; i < len(kv); i += 2 {
			out = append(out, cluster.RoomEntry{Node: kv[i].(string), Since: kv[i+1].(time.Time)})
		}
		return out
	}
	for _, c := range []struct {
		name     string
		self     string
		since    time.Time
		bridges  []cluster.RoomEntry
		draining map[string]bool
		want     string
	}{
		{"alone, not in the directory yet", "b", at(5), nil, nil, "b"},
		{"the oldest", "b", at(5), entries("a", at(3), "b", at(5), "c", at(1)), nil, "c"},
		{"self the oldest, its entry stale", "b", at(0), entries("a", at(3), "b", at(9)), nil, "b"},
		{"a tie: the lower id", "c", at(2), entries("b", at(2), "c", at(2)), nil, "b"},
		{"the oldest drains", "b", at(5), entries("a", at(1), "b", at(5)), map[string]bool{"a": true}, "b"},
		{"everyone drains", "b", at(5), entries("a", at(1), "b", at(5)), map[string]bool{"a": true, "b": true}, "a"},
		{"self drains", "b", at(1), entries("a", at(3)), map[string]bool{"b": true}, "a"},
	} {
		if got := speakerWriter(c.self, c.since, c.bridges, c.draining); got != c.want {
			t.Errorf("%s: writer %q, want %q", c.name, got, c.want)
		}
	}
}

// roomView is what a node's admin API says of a room's speaker.
type roomView struct {
	Speaker  string   `json:"speaker"`
	Speakers []string `json:"speakers"`
}

// TestSpeakerOrderAcrossBridges: three bridges serve one room (Ann on node0,
// whose room opened first, Bob on node1, Cleo on node2). node0 writes the
// speaker order and the others apply it: before anyone speaks every node
// has node0's order (each had its own join order), and as Bob, Cleo and Ann
// speak in turn every node's admin API and every client name the same
// dominant speaker and order, which node1 and node2 never decided
// themselves. node0 dies: node1 (next to open the room) takes over from the
// order it applied — Cleo then Bob, not its join order — and decides the
// next change, which node2 applies.
func TestSpeakerOrderAcrossBridges(t *testing.T) {
	start := time.Now()
	nodes := startRelayCluster(t, "us", "eu", "ap")
	awaitRegistries(t, 15*time.Second, nodes...)
	t.Logf("cluster ready after %v", time.Since(start))
	const name = "stage"
	ann := dialURL(t, wsURL(nodes[0])+"?bridge=node0", name, "Ann")
	bob := dialURL(t, wsURL(nodes[1])+"?bridge=node1", name, "Bob")
	cleo := dialURL(t, wsURL(nodes[2])+"?bridge=node2", name, "Cleo")
	clients := []*client.Client{ann, bob, cleo}
	annID, bobID, cleoID := ann.Snapshot().ID, bob.Snapshot().ID, cleo.Snapshot().ID
	names := map[string]string{annID: "Ann", bobID: "Bob", cleoID: "Cleo"}
	named := func(ids []string) string {
		var out []string
		for _, id := range ids {
			out = append(out, names[id])
		}
		return strings.Join(out, " ")
	}
	view := func(n *Server) roomView {
		var v roomView
		getJSON(t, n.URL()+"api/v1/rooms/"+name, &v)
		return v
	}
	// agree waits until every live node's admin API reports speaker and
	// order (and every client still on a live node was told the speaker).
	agree := func(live []*Server, speaker string, order []string, told []*client.Client) {
		t.Helper()
		var seen []string
		for end := time.Now().Add(15 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
			seen = seen[:0]
			ok := true
			for _, n := range live {
				v := view(n)
				seen = append(seen, n.Node().ID()+": "+names[v.Speaker]+" / "+named(v.Speakers))
				ok = ok && v.Speaker == speaker && slices.Equal(v.Speakers, order)
			}
			for _, c := range told {
				st := c.Snapshot()
				seen = append(seen, names[st.ID]+" told "+names[st.Speaker])
				ok = ok && st.Speaker == speaker
			}
			if ok {
				return
			}
		}
		t.Fatalf("not within 15 s: speaker %q and order %s everywhere; last seen %s", names[speaker], named(order), strings.Join(seen, "; "))
	}
	decided := func(n *Server) uint64 {
		rm, ok := n.Hub().Room(name)
		if !ok {
			t.Fatalf("%s does not serve %s", n.Node().ID(), name)
		}
		return rm.Decisions()
	}

	// Nobody spoke: node0's order (the order it learnt of the three)
	// everywhere; node1 saw Bob first, node2 Cleo first.
	var order []string
	within(t, 15*time.Second, "node0 lists the three", func() bool {
		order = view(nodes[0]).Speakers
		return len(order) == 3
	})
	if order[0] != annID {
		t.Fatalf("node0's order %s, want Ann first", named(order))
	}
	agree(nodes, "", order, clients)
	for _, turn := range []struct {
		c  *client.Client
		id string
	}{{bob, bobID}, {cleo, cleoID}, {ann, annID}} {
		order = append([]string{turn.id}, slices.DeleteFunc(order, func(id string) bool { return id == turn.id })...)
		turn.c.SetSpeaking(true)
		agree(nodes, turn.id, order, clients)
		turn.c.SetSpeaking(false)
	}
	if d0, d1, d2 := decided(nodes[0]), decided(nodes[1]), decided(nodes[2]); d0 < 3 || d1 != 0 || d2 != 0 {
		t.Fatalf("decisions: node0 %d, node1 %d, node2 %d; want 3 or more at node0 alone", d0, d1, d2)
	}
	t.Logf("three turns agreed after %v", time.Since(start))

	// The writer dies; Ann leaves the others' rooms with it.
	nodes[0].Node().Crash()
	killed := time.Now()
	live := nodes[1:]
	agree(live, "", []string{cleoID, bobID}, []*client.Client{bob, cleo})
	t.Logf("node0's order kept by node1 and node2 %v after the kill", time.Since(killed))
	bob.SetSpeaking(true)
	agree(live, bobID, []string{bobID, cleoID}, []*client.Client{bob, cleo})
	if d1, d2 := decided(nodes[1]), decided(nodes[2]); d1 == 0 || d2 != 0 {
		t.Errorf("after the kill: node1 decided %d, node2 %d; want node1 alone", d1, d2)
	}
	t.Logf("node1 decides after %v (%v in all)", time.Since(killed), time.Since(start))
}
