package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/podium-sfu/podium/internal/client"
	"github.com/podium-sfu/podium/internal/room"
	"github.com/podium-sfu/podium/internal/signal"
)

// adminDo sends an admin API request with a JSON body (nil: none) and
// returns the status and body.
func adminDo(t *testing.T, method, u string, body any) (int, []byte) {
	t.Helper()
	if body == nil {
		return httpDo(t, method, u, "", "", nil)
	}
	b, _ := json.Marshal(body)
	return httpDo(t, method, u, "", "application/json", bytes.NewReader(b))
}

// dialRawAt is dialRaw to a full signaling URL (?bridge= pins the node).
func dialRawAt(t *testing.T, u string) *rawConn { t.Helper(); return dialRawURL(t, u, nil) }

// TestClusterAdminSettingsAndChat: two clustered nodes with the relay, Ann
// and Cat on node0, Bob and Dan on node1, one room. An admin mute at node0 of
// Bob (node1's) is done by node1: Bob's client is told, Ann sees him muted.
// A Last N change at node1 applies at node0; two concurrent changes at both
// nodes leave both with the same value; a moderator's stage at node1 reaches
// node0. Chat crosses both ways, once and in order, and a raised hand too.
// Removing Bob at node0 ends his session at node1; closing the room at node1
// ends Ann's at node0.
func TestClusterAdminSettingsAndChat(t *testing.T) {
	start := time.Now()
	nodes := startRelayCluster(t, "us", "eu")
	n0, n1 := nodes[0], nodes[1]
	awaitRegistries(t, 10*time.Second, n0, n1)
	const name = "xadmin"
	ann := dialURL(t, wsURL(n0)+"?bridge=node0", name, "Ann")
	bob := dialURL(t, wsURL(n1)+"?bridge=node1", name, "Bob")
	annID, bobID := ann.Snapshot().ID, bob.Snapshot().ID
	knows := func(id string) func(*client.State) bool {
		return func(s *client.State) bool { _, ok := s.Participants[id]; return ok }
	}
	waitFor(t, ann, "Ann, on node0, is told of Bob on node1", 10*time.Second, knows(bobID))
	within(t, 10*time.Second, "each node's directory lists the other's bridge", func() bool {
		return len(n0.Node().Bridges(name, time.Now())) == 2 && len(n1.Node().Bridges(name, time.Now())) == 2
	})
	t.Logf("two bridges of the room after %v", time.Since(start))

	// Admin mute at node0 of Bob, whom node1 serves.
	api0, api1 := n0.URL()+"api/v1/rooms/"+name, n1.URL()+"api/v1/rooms/"+name
	status, body := adminDo(t, "POST", api0+"/participants/"+bobID+"/mute", signal.Muted{Audio: true})
	var p struct {
		ID         string `json:"id"`
		Node       string `json:"node"`
		AudioMuted bool   `json:"audioMuted"`
	}
	if err := json.Unmarshal(body, &p); status != http.StatusOK || err != nil || p.ID != bobID || p.Node != "node1" || !p.AudioMuted {
		t.Fatalf("mute Bob at node0: %d %s", status, body)
	}
	waitFor(t, bob, "Bob's client is told it is muted", 5*time.Second, func(s *client.State) bool { return s.AdminMuted.Audio })
	waitFor(t, ann, "Ann sees Bob muted", 5*time.Second, func(s *client.State) bool { return s.Participants[bobID].AudioMuted })
	if status, body := adminDo(t, "GET", api1+"/participants/"+annID, nil); status != http.StatusOK || !bytes.Contains(body, []byte(`"node": "node0"`)) {
		t.Fatalf("Ann at node1: %d %s", status, body)
	}
	if status, body := adminDo(t, "GET", api0+"/participants/nobody", nil); status != http.StatusNotFound {
		t.Fatalf("an unknown participant: %d %s", status, body)
	}

	// A Last N change at node1 applies at node0, once each node watches the
	// settings bucket (binding it waits for JetStream to elect the bucket's
	// leader: seconds on a busy box, CI45 under -race).
	for _, n := range nodes {
		select {
		case <-n.settings.Ready():
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: the settings bucket not watched within 10 s", n.Node().ID())
		}
	}
	rm0, _ := n0.Hub().Room(name)
	rm1, _ := n1.Hub().Room(name)
	changed := time.Now()
	if status, body := adminDo(t, "PATCH", api1, map[string]any{"lastN": 2}); status != http.StatusOK || rm1.Settings().LastN != 2 {
		t.Fatalf("Last N 2 at node1: %d %s (node1 has %d)", status, body, rm1.Settings().LastN)
	}
	within(t, 2*time.Second, "node0 applies node1's Last N", func() bool { return rm0.Settings().LastN == 2 })
	t.Logf("Last N changed at node1 applied at node0 %v after the request", time.Since(changed))

	// Concurrent changes at both nodes: both end with the same value.
	for round := range 3 {
		var wg sync.WaitGroup
		for i, api := range []string{api0, api1} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if status, body := adminDo(t, "PATCH", api, map[string]any{"lastN": 3 + 2*round + i}); status != http.StatusOK {
					t.Errorf("PATCH %s: %d %s", api, status, body)
				}
			}()
		}
		wg.Wait()
		within(t, 2*time.Second, "both nodes agree after concurrent changes", func() bool {
			a, b := rm0.Settings().LastN, rm1.Settings().LastN
			return a == b && (a == 3+2*round || a == 4+2*round)
		})
	}

	// A moderator's stage at node1 reaches node0.
	if err := bob.Send(signal.TypeRoomSettings, signal.RoomSettings{OnStage: []string{annID}}); err != nil {
		t.Fatal(err)
	}
	within(t, 2*time.Second, "node0 puts Ann on stage as Bob asked at node1", func() bool {
		st, ok := rm0.Stats(time.Now())
		return ok && slices.Equal(st.OnStage, []string{annID})
	})

	// Chat both ways, once and in order; a raised hand.
	cat := dialRawAt(t, wsURL(n0)+"?bridge=node0")
	cat.join(name, "Cat")
	dan := dialRawAt(t, wsURL(n1)+"?bridge=node1")
	dan.join(name, "Dan")
	for i := range 5 {
		cat.chat(fmt.Sprint("from Cat ", i))
	}
	dan.chat("from Dan")
	var fromCat []string
	deadline := time.After(5 * time.Second)
	for len(fromCat) < 5 {
		select {
		case m := <-dan.msgs:
			if m.Type == signal.TypeChat {
				var c signal.ChatMessage
				_ = json.Unmarshal(m.raw, &c)
				if c.From == cat.id {
					fromCat = append(fromCat, c.Text)
				}
			}
		case <-deadline:
			t.Fatalf("Dan on node1 got %q of Cat's chat", fromCat)
		}
	}
	if !slices.Equal(fromCat, []string{"from Cat 0", "from Cat 1", "from Cat 2", "from Cat 3", "from Cat 4"}) {
		t.Fatalf("Dan got Cat's chat as %q", fromCat)
	}
	if c := cat.expectChatFrom(dan.id); c.Text != "from Dan" {
		t.Fatalf("Cat got %+v", c)
	}
	waitFor(t, ann, "Ann on node0 is told of Dan", 5*time.Second, knows(dan.id))
	dan.send([]byte(`{"type":"raise-hand","raised":true}`))
	waitFor(t, ann, "Ann on node0 sees Dan's hand raised", 5*time.Second, func(s *client.State) bool { return s.Participants[dan.id].HandRaised })
	dan.send([]byte(`{"type":"raise-hand","raised":false}`))
	waitFor(t, ann, "Ann on node0 sees Dan's hand lowered", 5*time.Second, func(s *client.State) bool { return !s.Participants[dan.id].HandRaised })
	// Once: a late joiner on node0 has each message once in its history.
	eve := dialRawAt(t, wsURL(n0)+"?bridge=node0")
	eve.join(name, "Eve")
	texts := map[string]int{}
	for _, m := range eve.history() {
		texts[m.Text]++
	}
	if len(texts) != 6 || texts["from Dan"] != 1 || texts["from Cat 4"] != 1 {
		t.Fatalf("Eve's history: %v", texts)
	}

	// Remove Bob at node0; close the room at node1.
	if status, body := adminDo(t, "DELETE", api0+"/participants/"+bobID, nil); status != http.StatusNoContent {
		t.Fatalf("remove Bob at node0: %d %s", status, body)
	}
	waitFor(t, bob, "Bob's session at node1 ends as removed", 5*time.Second, func(s *client.State) bool { return s.ByeCode == signal.ByeRemoved })
	within(t, 5*time.Second, "Bob has left node1's room", func() bool {
		st, _ := rm1.Stats(time.Now())
		return !slices.ContainsFunc(st.Participants, func(p room.ParticipantStats) bool { return p.ID == bobID })
	})
	status, body = adminDo(t, "DELETE", api1, nil)
	var closed struct{ Removed int }
	if err := json.Unmarshal(body, &closed); status != http.StatusOK || err != nil || closed.Removed != 4 {
		t.Fatalf("close at node1: %d %s (want 4 removed: Ann, Cat, Eve at node0, Dan at node1)", status, body)
	}
	waitFor(t, ann, "Ann's session at node0 ends as the room closed", 5*time.Second, func(s *client.State) bool { return s.ByeCode == signal.ByeRoomClosed })

	// A room that opens on a bridge gets the chat of the bridge already
	// serving it.
	ivy := dialRawAt(t, wsURL(n0)+"?bridge=node0")
	ivy.join("xhist", "Ivy")
	ivy.chat("said before node1 had the room")
	ivy.expectChat("said before node1 had the room")
	within(t, 5*time.Second, "node1's directory has the room at node0", func() bool { return len(n1.Node().Bridges("xhist", time.Now())) == 1 })
	hal := dialRawAt(t, wsURL(n1)+"?bridge=node1")
	hal.join("xhist", "Hal")
	hal.waitFor("a chat history with Ivy's message", func(m serverMsg) bool {
		return m.Type == signal.TypeChatHistory && bytes.Contains(m.raw, []byte("said before node1 had the room"))
	})

	// A bridge that is gone is a clear error at once, not a hang: node1
	// crashes while node0 still counts it healthy (its TTL), and muting its
	// participant at node0 is 502 (no responders) or 504 (asked in vain).
	fay := dialURL(t, wsURL(n1)+"?bridge=node1", "xgone", "Fay")
	within(t, 5*time.Second, "node0's directory has Fay's room at node1", func() bool { return len(n0.Node().Bridges("xgone", time.Now())) == 1 })
	var list struct {
		Rooms []struct{ Name, Node string }
	}
	getJSON(t, n0.URL()+"api/v1/rooms", &list)
	if !slices.ContainsFunc(list.Rooms, func(r struct{ Name, Node string }) bool { return r.Name == "xgone" && r.Node == "node1" }) {
		t.Fatalf("node0 lists rooms %+v, without node1's xgone", list.Rooms)
	}
	n1.Node().Crash()
	asked := time.Now()
	status, body = adminDo(t, "POST", n0.URL()+"api/v1/rooms/xgone/participants/"+fay.Snapshot().ID+"/mute", signal.Muted{Audio: true})
	switch {
	case status == http.StatusBadGateway && bytes.Contains(body, []byte("bridge-unavailable")),
		status == http.StatusGatewayTimeout && bytes.Contains(body, []byte("bridge-timeout")):
		t.Logf("a gone bridge: %d after %v", status, time.Since(asked))
	case status == http.StatusNotFound && n0.Node().HealthyNodes(time.Now()) == 1:
		t.Logf("node1 expired from node0's registry before the request (%v): 404", time.Since(asked))
	default:
		t.Fatalf("mute at a crashed bridge: %d %s", status, body)
	}
	t.Logf("done after %v", time.Since(start))
}

// expectChatFrom waits for a chat message from id.
func (rc *rawConn) expectChatFrom(id string) signal.ChatMessage {
	rc.t.Helper()
	var c signal.ChatMessage
	rc.waitFor("chat from "+id, func(m serverMsg) bool {
		if m.Type != signal.TypeChat {
			return false
		}
		_ = json.Unmarshal(m.raw, &c)
		return c.From == id
	})
	return c
}
