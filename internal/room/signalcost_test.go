package room

import (
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/forward"
	"github.com/podium-sfu/podium/internal/signal"
)

// countingMember encodes what the room sends it, as a session would, and
// counts the frames and bytes.
type countingMember struct {
	id           string
	msgs, bytes  *atomic.Int64
	rosterFrames atomic.Int64
}

func (c *countingMember) ID() string { return c.id }
func (c *countingMember) Send(typ string, body any) {
	frame, err := signal.Encode(typ, body)
	if err != nil {
		panic(err)
	}
	c.msgs.Add(1)
	c.bytes.Add(int64(len(frame)))
	if typ == signal.TypeJoined || typ == signal.TypeUpdated || typ == signal.TypeLeft || typ == signal.TypeParticipants {
		c.rosterFrames.Add(1)
	}
}
func (c *countingMember) AddDownTrack(*forward.DownTrack)     {}
func (c *countingMember) RemoveDownTrack(*forward.DownTrack)  {}
func (c *countingMember) Replaced()                           {}
func (c *countingMember) RTT() (time.Duration, time.Duration) { return 0, 0 }
func (c *countingMember) Remove(string, string)               {}
func (c *countingMember) Failed(string)                       {}
func (c *countingMember) Link() *forward.Link                 { return nil }
func (c *countingMember) welcomeBytes(others []signal.Participant) int {
	frame, _ := signal.Encode(signal.TypeWelcome, signal.Welcome{Participants: others})
	return len(frame)
}

// joinCost is what n joins cost the server's room and signaling layers.
type joinCost struct {
	n                     int
	cpuPerJoin            time.Duration // process CPU (user+system) per join
	msgsPerJoin           float64       // frames sent to the others (and to the joiner), per join
	bytesPerJoin          float64
	welcomeBytesAtN       int // the last joiner's welcome
	rosterFramesPerMember float64
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// measureJoins fills a room with n participants as fast as they can join: the
// first ten may publish (each publishes audio and video), the rest join
// receive-only. It waits until the room has told everyone what changed, then
// counts the signaling frames, their bytes and the process CPU, per join.
func measureJoins(t testing.TB, n int) joinCost {
	hub := NewHub(Settings{LastN: 8, VideoPausing: true})
	defer hub.Close()
	var msgs, bytes atomic.Int64
	members := make([]*countingMember, 0, n)
	var r *Room
	var welcome int
	requests := 0
	start := cpuTime()
	for i := range n {
		m := &countingMember{id: fmt.Sprintf("p%04d", i), msgs: &msgs, bytes: &bytes}
		perms := signal.Permissions{Subscribe: true, Publish: i < 10}
		room, others, err := hub.JoinWith("big", m, signal.Participant{ID: m.id, Name: m.id}, JoinOptions{Permissions: perms})
		if err != nil {
			t.Fatal(err)
		}
		r = room
		welcome = m.welcomeBytes(others)
		msgs.Add(1)
		bytes.Add(int64(welcome))
		if perms.Publish {
			r.Publish(m, upTrack(m.id, webrtc.RTPCodecTypeAudio, &requests))
			r.Publish(m, upTrack(m.id, webrtc.RTPCodecTypeVideo, &requests))
		}
		members = append(members, m)
	}
	r.settle()
	cpu := cpuTime() - start
	c := joinCost{n: n, cpuPerJoin: cpu / time.Duration(n), msgsPerJoin: float64(msgs.Load()) / float64(n),
		bytesPerJoin: float64(bytes.Load()) / float64(n), welcomeBytesAtN: welcome}
	var frames int64
	for _, m := range members {
		frames += m.rosterFrames.Load()
	}
	c.rosterFramesPerMember = float64(frames) / float64(n)
	for _, m := range members {
		hub.Leave(r, m)
	}
	return c
}

// TestSignalingCostPerJoinIsFlat joins 10, 100 and 1,000 participants and fails
// when a join at 1,000 costs more than 3x one at 10 in frames, bytes or CPU
// (CPU not under the race detector, which slows everything several times and
// unevenly). PODIUM_SIGNALING_TABLE=1 prints the table docs/scale.md shows.
func TestSignalingCostPerJoinIsFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("joins 1,110 participants")
	}
	runs := 3 // the least CPU of three: the box is shared
	if raceDetector {
		runs = 1
	}
	var costs []joinCost
	for _, n := range []int{10, 100, 1000} {
		best := measureJoins(t, n)
		for range runs - 1 {
			if c := measureJoins(t, n); c.cpuPerJoin < best.cpuPerJoin {
				best.cpuPerJoin = c.cpuPerJoin
			}
		}
		costs = append(costs, best)
	}
	table := "| participants | CPU per join | frames per join | bytes per join | last welcome (bytes) | roster frames per participant |\n|---|---|---|---|---|---|\n"
	for _, c := range costs {
		table += fmt.Sprintf("| %d | %.1f µs | %.1f | %.0f | %d | %.1f |\n", c.n, float64(c.cpuPerJoin.Nanoseconds())/1e3,
			c.msgsPerJoin, c.bytesPerJoin, c.welcomeBytesAtN, c.rosterFramesPerMember)
	}
	t.Log("\n" + table)
	if os.Getenv("PODIUM_SIGNALING_TABLE") != "" {
		fmt.Print(table)
	}
	small, big := costs[0], costs[len(costs)-1]
	if big.msgsPerJoin > 3*small.msgsPerJoin {
		t.Errorf("frames per join: %.1f at %d, %.1f at %d: more than 3x", small.msgsPerJoin, small.n, big.msgsPerJoin, big.n)
	}
	if big.bytesPerJoin > 3*small.bytesPerJoin {
		t.Errorf("bytes per join: %.0f at %d, %.0f at %d: more than 3x", small.bytesPerJoin, small.n, big.bytesPerJoin, big.n)
	}
	if !raceDetector && big.cpuPerJoin > 3*small.cpuPerJoin {
		t.Errorf("CPU per join: %v at %d, %v at %d: more than 3x", small.cpuPerJoin, small.n, big.cpuPerJoin, big.n)
	}
}
