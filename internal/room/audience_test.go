package room

import (
	"slices"
	"testing"

	"github.com/podium-sfu/podium/internal/algo/lastn"
	"github.com/podium-sfu/podium/internal/signal"
)

// TestAudienceCostsOthersNothing: members without the publish permission
// receive every publisher but hold no place in the speaker order (so no Last N
// slot and no stage), and the publishers keep no down-track toward them beyond
// what they receive themselves: each publisher's state is the same with 0 or
// 20 audience members.
func TestAudienceCostsOthersNothing(t *testing.T) {
	f := newFixture(t, Settings{LastN: -1, VideoPausing: true})
	a, b := f.join("a", true), f.join("b", true)
	audience := JoinOptions{Permissions: signal.Permissions{Subscribe: true}}
	var viewers []*fakeMember
	for i := range 20 {
		id := "v" + string(rune('a'+i))
		v := newFake(id)
		if _, _, err := f.hub.JoinWith("r", v, signal.Participant{ID: id, Audience: true}, audience); err != nil {
			t.Fatal(err)
		}
		f.members[id] = v
		viewers = append(viewers, v)
	}
	for _, v := range viewers {
		if len(v.downs) != 4 {
			t.Errorf("%s receives %d tracks, want a's and b's audio and video", v.id, len(v.downs))
		}
		if got := v.selectedSources(); !slices.Equal(got, []string{"a", "b"}) {
			t.Errorf("%s is sent video of %v, want [a b]", v.id, got)
		}
	}
	for _, p := range []*fakeMember{a, b} {
		if len(p.downs) != 2 {
			t.Errorf("publisher %s holds %d down-tracks, want 2 (the other publisher's)", p.id, len(p.downs))
		}
		if got, _ := p.last(signal.TypeForwarded); got != `{"ids":["`+map[string]string{"a": "b", "b": "a"}[p.id]+`"],"lastN":-1}` {
			t.Errorf("publisher %s was told it gets %s", p.id, got)
		}
	}
	var order []lastn.ID
	f.room.do(func(s *state) {
		order = slices.Clone(s.order.IDs())
		for id, m := range s.members {
			for up := range m.downs {
				if up.Source() != "a" && up.Source() != "b" {
					t.Errorf("%s holds a down-track of %s", id, up.Source())
				}
			}
			if len(m.ups) != 0 && id != "a" && id != "b" {
				t.Errorf("audience member %s has %d up-tracks", id, len(m.ups))
			}
		}
	})
	if !slices.Equal(order, []lastn.ID{"a", "b"}) {
		t.Errorf("speaker order %v, want only the publishers [a b]", order)
	}
	// Pinning an audience member is pinning nobody: no video exists to send.
	_ = f.room.Pin(a, "va")
	if got := a.selectedSources(); !slices.Equal(got, []string{"b"}) {
		t.Errorf("after pinning an audience member a receives %v", got)
	}
	// Leaving removes an audience member without disturbing anyone's selection.
	f.leave("va")
	if got := b.selectedSources(); !slices.Equal(got, []string{"a"}) {
		t.Errorf("after an audience member left b receives %v", got)
	}
}
