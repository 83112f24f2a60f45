package room

import (
	"strings"
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

// TestStatsSentWithOnlyTheirFrames: the downlink stats every receiver gets
// each second cost one allocation each, the frame the session queues (the
// room reuses its stats, signal encodes them without reflection).
func TestStatsSentWithOnlyTheirFrames(t *testing.T) {
	f := newFixture(t, Settings{LastN: -1, VideoPausing: true})
	f.join("viewer", false) // no congestion control, no stats; makes f.room
	ids := []string{"a", "b", "c"}
	for _, id := range ids {
		m := f.joinLinked(id, bwe.DefaultConfig())
		f.room.DeclareEncodings(m, []string{"q", "h", "f"})
		for _, rid := range []string{"q", "h", "f"} {
			f.room.Publish(m, encodingUp(id, rid, nil))
		}
	}
	f.room.settle()
	for _, id := range ids {
		f.members[id].mu.Lock()
		f.members[id].frames = true
		f.members[id].mu.Unlock()
	}
	now := time.Now().Add(layerOffDelay + time.Second)
	var allocs float64
	f.room.do(func(s *state) {
		s.maintainLayers(now) // warm up
		allocs = testing.AllocsPerRun(50, func() {
			now = now.Add(statsInterval)
			s.maintainLayers(now)
		})
	})
	for _, id := range ids {
		m := f.members[id]
		m.mu.Lock()
		frame := string(m.frame)
		m.mu.Unlock()
		if !strings.HasPrefix(frame, `{"type":"stats","estimate":`) || strings.Count(frame, `"encoding":`) != len(ids)-1 {
			t.Fatalf("%s's last frame %s, want its stats on %d videos", id, frame, len(ids)-1)
		}
	}
	if want := float64(len(ids)); allocs != want {
		t.Errorf("a second's stats allocate %v times, want %v (the frames)", allocs, want)
	}
}
