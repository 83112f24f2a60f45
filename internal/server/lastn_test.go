package server

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/podium-sfu/podium/internal/client"
	"github.com/podium-sfu/podium/internal/config"
	"github.com/podium-sfu/podium/internal/room"
)

// activeVideos counts, over all clients, the videos each is sent: those received
// in the last 1.5 s (long enough that a receiver starved of CPU for a moment on a
// busy 2-core box still counts what it is sent: CI once read 29 of 30 with a
// 0.5 s window at load 17; short enough that a stopped stream drops out while
// the callers wait), and those of its Last N selection the SFU told it it
// suspended for lack of bandwidth. On that box the test clients' feedback
// under -race is late enough for the delay-based estimate of a receiver to
// sink below the ~1.3 Mb/s its three videos and nine audio streams take (to
// its 30 kb/s floor at worst), and bandwidth adaptation then rightly
// suspends some of them; that is not what Last N is tested for, and a
// selected video that is neither arriving nor announced suspended still
// fails the count.
func activeVideos(cs []*client.Client) (total int, per []int, suspended int) {
	for _, c := range cs {
		st := c.Snapshot()
		sent := map[string]bool{}
		for _, tr := range st.Tracks {
			if tr.Kind == "video" && time.Since(tr.LastSeen) < 1500*time.Millisecond {
				sent[tr.Source] = true
			}
		}
		for _, id := range st.Suspended {
			if slices.Contains(st.Forwarded, id) && !sent[id] {
				sent[id] = true
				suspended++
			}
		}
		per = append(per, len(sent))
		total += len(sent)
	}
	return total, per, suspended
}

// With K senders and Last N = N, the SFU forwards K×N video streams rather than
// K×(K−1), pauses the K−N−1 senders nobody watches, follows the dominant speaker,
// and asks a newly needed sender for exactly one keyframe.
func TestLastNForwardsKTimesN(t *testing.T) {
	const K, N = 10, 3
	srv := startServerWith(t, Options{}, func(c *config.Config) { c.LastN = N })
	cs := make([]*client.Client, K)
	ids := make([]string, K)
	for i := range cs {
		cs[i] = dial(t, srv, "lastn", fmt.Sprintf("P%d", i), true)
		ids[i] = cs[i].Snapshot().ID
	}
	settle := func(what string, want int) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for {
			total, per, suspended := activeVideos(cs)
			// Each receiver gets its own N: a total alone can be met by a mix.
			if total == want && !slices.ContainsFunc(per, func(n int) bool { return n != want/K }) {
				t.Logf("%s: %d video streams forwarded (full star would be %d), per receiver %v, %d of them suspended for bandwidth", what, total, K*(K-1), per, suspended)
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d video streams forwarded, want %d (per receiver %v, %d of them suspended for bandwidth)", what, total, want, per, suspended)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	settle("nobody speaking", K*N)

	pausedCount := func() (n int) {
		for _, c := range cs {
			if c.Snapshot().Paused {
				n++
			}
		}
		return n
	}
	// A sender is paused only once its first room.NewSenderGrace of video has
	// passed; the last to join may be well within it here.
	deadline := time.Now().Add(room.NewSenderGrace + 3*time.Second)
	for pausedCount() != K-N-1 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if n := pausedCount(); n != K-N-1 {
		t.Fatalf("%d senders paused, want K−N−1 = %d", n, K-N-1)
	}
	for _, c := range cs {
		if st := c.Snapshot(); st.Paused {
			before := c.VideoFramesSent()
			time.Sleep(300 * time.Millisecond)
			if after := c.VideoFramesSent(); after != before {
				t.Errorf("%s keeps sending video while paused (%d → %d frames)", st.ID, before, after)
			}
			break
		}
	}

	// The last joiner, far down the speaker order and paused, starts speaking.
	speaker := cs[K-1]
	if !speaker.Snapshot().Paused {
		t.Fatalf("the last joiner should start paused")
	}
	requestsBefore := speaker.KeyframeRequests()
	speaker.SetSpeaking(true)
	start := time.Now()
	for _, c := range cs[:K-1] {
		waitFor(t, c, "speaker forwarded", 3*time.Second, func(s *client.State) bool {
			return s.Speaker == ids[K-1] && slices.Contains(s.Forwarded, ids[K-1])
		})
	}
	t.Logf("speaker in every receiver's forwarded set after %v", time.Since(start).Round(time.Millisecond))
	// Its video starts at the keyframe asked for, at every receiver whose
	// bandwidth estimate does not suspend it (see activeVideos).
	arriving := func(s *client.State) bool {
		tr := s.Tracks["video-"+ids[K-1]]
		return tr != nil && tr.Keyframes > 0 && time.Since(tr.LastSeen) < 500*time.Millisecond
	}
	got := 0
	for _, c := range cs[:K-1] {
		waitFor(t, c, "speaker's video arrives or is suspended for bandwidth", 5*time.Second, func(s *client.State) bool {
			return arriving(s) || slices.Contains(s.Suspended, ids[K-1])
		})
		if st := c.Snapshot(); arriving(&st) {
			got++
		}
	}
	if got == 0 {
		t.Fatal("the speaker's video reached no receiver: every one has it suspended for bandwidth")
	}
	if speaker.Snapshot().Paused {
		t.Error("the dominant speaker is still paused")
	}
	time.Sleep(time.Second)
	if got := speaker.KeyframeRequests() - requestsBefore; got != 1 {
		t.Errorf("the new speaker got %d keyframe requests, want exactly 1 (one from the SFU, not one per receiver)", got)
	}
	settle("one speaker", K*N)
}
