package e2e

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/podium-sfu/podium/internal/relay"
	"github.com/podium-sfu/podium/internal/server"
)

// adminIDs lists the participant ids a node's admin API gives for room.
func adminIDs(s *server.Server, room string) ([]string, error) {
	ps, err := roomParticipants[struct {
		ID   string `json:"id"`
		Node string `json:"node"`
	}](s.URL(), room)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, p := range ps {
		ids = append(ids, p.ID+"@"+p.Node)
	}
	slices.Sort(ids)
	return ids, nil
}

// videoRising: b decodes new frames of each of ids' video.
func videoRising(b *Browser, ids ...string) (bool, string) {
	count := func() (map[string]int, error) {
		rows, err := b.inbound()
		out := map[string]int{}
		for _, r := range rows {
			if r.Kind == "video" {
				out[r.ParticipantID] = r.FramesDecoded
			}
		}
		return out, err
	}
	first, err := count()
	if err != nil {
		return false, err.Error()
	}
	time.Sleep(700 * time.Millisecond)
	second, err := count()
	if err != nil {
		return false, err.Error()
	}
	for _, id := range ids {
		if second[id] <= first[id] {
			return false, fmt.Sprintf("%s: video of %s not decoding (%d → %d frames)", b.name, id, first[id], second[id])
		}
	}
	return true, ""
}

// TestRelayInTheBrowser is issue 15's two-node browser test: Ann and Cleo
// join through node 0 (region us), Bob through node 1 (region eu), so
// bridge selection keeps Bob on node 1 and the conference spans both, joined
// by the relay. Everyone renders both others (camera colours), each node's
// admin API lists all three once with their bridges, and both nodes' rooms
// have the same dominant speaker, Ann, the only one speaking.
func TestRelayInTheBrowser(t *testing.T) {
	nodes := startRelayNodes(t, "us", "eu")
	n0, n1 := nodes[0], nodes[1]
	const room = "relay-e2e"
	ann := launch(t, "Ann", camera(t, red, 320, 180), autoplay)
	ann.withMicrophone(true)
	cleo := launch(t, "Cleo", camera(t, blue, 320, 180), autoplay)
	cleo.withMicrophone(false)
	bob := launch(t, "Bob", camera(t, green, 320, 180), autoplay)
	bob.withMicrophone(false)
	start := time.Now()
	annWho := who{Name: "Ann", ID: ann.join(n0.URL()+room+"?video=320x180&name=", "Ann"), Colour: red}
	cleoWho := who{Name: "Cleo", ID: cleo.join(n0.URL()+room+"?video=320x180&name=", "Cleo"), Colour: blue}
	bobWho := who{Name: "Bob", ID: bob.join(n1.URL()+room+"?video=320x180&name=", "Bob"), Colour: green}
	within(t, "Ann and Cleo served by node 0, Bob by node 1", 10*time.Second, func() (bool, string) {
		r0, ok0 := n0.Hub().Room(room)
		r1, ok1 := n1.Hub().Room(room)
		if !ok0 || !ok1 {
			return false, fmt.Sprintf("room at node0 %v, node1 %v", ok0, ok1)
		}
		l0, l1 := r0.Locals(), r1.Locals()
		return len(l0) == 2 && len(l1) == 1 && l1[0].Info.ID == bobWho.ID, fmt.Sprintf("node0 serves %d, node1 %d", len(l0), len(l1))
	})

	within(t, "Ann shows Bob and Cleo", 30*time.Second, func() (bool, string) { return showsWho(ann, bobWho, cleoWho) })
	within(t, "Cleo shows Ann and Bob", 20*time.Second, func() (bool, string) { return showsWho(cleo, annWho, bobWho) })
	within(t, "Bob shows Ann and Cleo", 20*time.Second, func() (bool, string) { return showsWho(bob, annWho, cleoWho) })
	t.Logf("everyone shows both others %v after the joins", time.Since(start).Round(time.Millisecond))
	within(t, "Bob decodes Ann's and Cleo's video", 5*time.Second, func() (bool, string) { return videoRising(bob, annWho.ID, cleoWho.ID) })
	within(t, "Ann decodes Bob's video", 5*time.Second, func() (bool, string) { return videoRising(ann, bobWho.ID) })

	within(t, "both nodes' rooms have Ann, the one speaking, as the dominant speaker", 15*time.Second, func() (bool, string) {
		var speakers []string
		for _, s := range nodes {
			r, ok := s.Hub().Room(room)
			if !ok {
				return false, s.Node().ID() + " has no room"
			}
			st, _ := r.Stats(time.Now())
			speakers = append(speakers, st.Speaker)
		}
		return speakers[0] == annWho.ID && speakers[1] == annWho.ID, fmt.Sprintf("speakers %v, want %s on both", speakers, annWho.ID)
	})
	want := []string{annWho.ID + "@node0", bobWho.ID + "@node1", cleoWho.ID + "@node0"}
	slices.Sort(want)
	for _, s := range nodes {
		within(t, s.Node().ID()+"'s admin API lists the three, once each, with their bridges", 10*time.Second, func() (bool, string) {
			ids, err := adminIDs(s, room)
			return err == nil && slices.Equal(ids, want), fmt.Sprintf("%v (err %v), want %v", ids, err, want)
		})
	}
	for _, s := range nodes {
		st := s.Relay().Stats()
		t.Logf("%s: relay sent %d datagrams (%d B), accepted %d; dropped forged %d, replayed %d, unknown key %d", s.Node().ID(),
			st.Sent.Load(), st.SentBytes.Load(), st.Received.Load(), st.Dropped[relay.Forged].Load(), st.Dropped[relay.Replayed].Load(), st.Dropped[relay.UnknownKey].Load())
	}
}
