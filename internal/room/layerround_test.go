package room

import (
	"testing"
	"time"

	"github.com/podium-sfu/podium/internal/algo/bwe"
	"github.com/podium-sfu/podium/internal/signal"
)

// A layer round (maintainLayers, and allocate for every receiver with
// congestion control) runs every layersInterval for every member and source:
// in steady state it reuses the room loop's scratch and allocates nothing.
func TestLayerRoundDoesNotAllocate(t *testing.T) {
	f := newFixture(t, Settings{LastN: -1, VideoPausing: true})
	ids := []string{"a", "b", "c", "d"}
	for i, id := range ids {
		var m *fakeMember
		if i == 0 {
			m = f.join(id, false) // no congestion control: layers follow the constraints
		} else {
			m = f.joinLinked(id, bwe.DefaultConfig())
		}
		f.room.DeclareEncodings(m, []string{"q", "h", "f"})
		for _, rid := range []string{"q", "h", "f"} {
			f.room.Publish(m, encodingUp(id, rid, nil))
		}
	}
	f.room.settle()
	for i, id := range ids {
		show := map[string]signal.VideoConstraint{}
		for j, other := range ids {
			if other == id {
				continue
			}
			c := signal.VideoConstraint{Width: 320, Height: 180, Role: "thumbnail"}
			if j == (i+1)%len(ids) {
				c = signal.VideoConstraint{Width: 1280, Height: 720, Role: "stage"}
			}
			show[other] = c
		}
		f.room.SetConstraints(f.members[id], show)
	}
	now := time.Now().Add(layerOffDelay + time.Second)
	var allocs float64
	var videos int
	f.room.do(func(s *state) {
		s.maintainLayers(now) // warm up: scratch grows, messages sent once
		s.maintainLayers(now)
		for _, m := range s.members {
			videos += len(m.videoDowns())
		}
		allocs = testing.AllocsPerRun(100, func() { s.maintainLayers(now) })
	})
	if want := len(ids) * (len(ids) - 1); videos != want {
		t.Fatalf("%d videos received in all, want %d: the round would not cover every member and source", videos, want)
	}
	if allocs != 0 {
		t.Errorf("a layer round allocates %v times, want 0", allocs)
	}
}
