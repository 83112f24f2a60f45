package server

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/algo/overload"
	"github.com/podium-sfu/podium/internal/client"
	"github.com/podium-sfu/podium/internal/signal"
)

// TestOverloadShedsVideoKeepsAudioAndRestores drives the overload protection
// with an injected CPU reading: above overload-cpu the room's Last N falls a
// step at a time to audio only, audio keeps flowing, new joins (WebSocket and
// WHIP) are refused with server-busy / 503, and when the CPU falls it all
// comes back.
func TestOverloadShedsVideoKeepsAudioAndRestores(t *testing.T) {
	var cpu atomic.Uint64
	setCPU := func(x float64) { cpu.Store(math.Float64bits(x)) }
	setCPU(0.1)
	timing := overload.Config{DownWait: 400 * time.Millisecond, UpWait: 600 * time.Millisecond}
	srv := startServer(t, Options{CPU: func(time.Time) float64 { return math.Float64frombits(cpu.Load()) },
		OverloadInterval: 100 * time.Millisecond, OverloadTiming: &timing})

	const K = 5
	cs := make([]*client.Client, K)
	ids := make([]string, K)
	for i := range cs {
		cs[i] = dial(t, srv, "busy", fmt.Sprintf("P%d", i), true)
		ids[i] = cs[i].Snapshot().ID
	}
	for i, c := range cs {
		others := slices.Delete(slices.Clone(ids), i, i+1)
		waitFor(t, c, "everyone's audio and video", 15*time.Second, receiving(others...))
	}
	r, ok := srv.Hub().Room("busy")
	if !ok {
		t.Fatal("room busy not live")
	}
	// forwarded is the most videos any participant gets, as the room's stats
	// (the admin API's view) say.
	forwarded := func() int {
		st, ok := r.Stats(time.Now())
		if !ok {
			t.Fatal("room ended")
		}
		n := 0
		for _, p := range st.Participants {
			n = max(n, len(p.Forwarded))
		}
		return n
	}
	if n := forwarded(); n != K-1 {
		t.Fatalf("before overload: %d videos forwarded per receiver, want %d", n, K-1)
	}

	setCPU(1)
	var seen []int // the distinct Last N values the room went through
	deadline := time.Now().Add(15 * time.Second)
	for {
		if n := forwarded(); len(seen) == 0 || seen[len(seen)-1] != n {
			seen = append(seen, n)
		}
		if seen[len(seen)-1] == 0 && srv.Hub().Busy() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("overloaded 15 s: videos per receiver went %v, busy %v; want down to 0 and joins refused", seen, srv.Hub().Busy())
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("under overload, videos per receiver went %v", seen)
	if len(seen) < 3 || !slices.IsSortedFunc(seen, func(a, b int) int { return b - a }) {
		t.Errorf("videos per receiver went %v: want a stepwise fall (at least one step between %d and 0)", seen, K-1)
	}

	if st, _ := r.Stats(time.Now()); st.Shed == nil || st.Shed.LastN != 0 {
		t.Errorf("room stats at the floor show shed %+v, want Last N 0", st.Shed)
	}
	// Audio only: every participant still hears everyone.
	time.Sleep(500 * time.Millisecond)
	for i, c := range cs {
		st := c.Snapshot()
		for j, id := range ids {
			if j == i {
				continue
			}
			a := st.Tracks["audio-"+id]
			if a == nil || time.Since(a.LastSeen) > 300*time.Millisecond {
				t.Errorf("%s hears nothing from %s at the overload floor", ids[i], id)
			}
		}
	}
	rc := dialRaw(t, srv)
	rc.joinFrame("busy", "Late", "")
	if m := rc.waitFor("server-busy", isError(signal.CodeServerBusy)); !m.Fatal {
		t.Errorf("server-busy not fatal: %s", m.raw)
	}
	nr := dialRaw(t, srv) // nor does a new room open
	nr.joinFrame("elsewhere", "New", "")
	nr.waitFor("server-busy for a new room", isError(signal.CodeServerBusy))
	if status, body, h := whipPost(t, srv, "busy"); status != http.StatusServiceUnavailable || !strings.Contains(body, "overloaded") || h.Get("Retry-After") != "60" {
		t.Errorf("WHIP while overloaded: %d %q, Retry-After %q; want 503 saying overloaded, Retry-After 60", status, body, h.Get("Retry-After"))
	}

	setCPU(0.1)
	shed := func() *overload.Cap { st, _ := r.Stats(time.Now()); return st.Shed }
	deadline = time.Now().Add(20 * time.Second)
	for forwarded() != K-1 || srv.Hub().Busy() || shed() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("20 s after the load fell: %d videos per receiver (want %d), busy %v, shed %+v", forwarded(), K-1, srv.Hub().Busy(), shed())
		}
		time.Sleep(50 * time.Millisecond)
	}
	for i, c := range cs {
		others := slices.Delete(slices.Clone(ids), i, i+1)
		waitFor(t, c, "everyone's video back", 10*time.Second, receiving(others...))
	}
	dialRaw(t, srv).join("busy", "Later") // admitted again
}

// whipPost offers to publish into room and returns the status, body and headers.
func whipPost(t *testing.T, srv *Server, room string) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest("POST", srv.URL()+"whip/"+room+"?name=OBS", strings.NewReader(offerSDP(t, webrtc.RTPTransceiverDirectionSendonly)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/sdp")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}
