package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"runtime/pprof"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/podium-sfu/podium/internal/client"
	"github.com/podium-sfu/podium/internal/config"
)

// Participants joining, publishing, receiving and leaving must leave no goroutine
// behind, neither while the server keeps running nor after it stopped.
//
// go.uber.org/goleak is not in go.mod, so this counts runtime.NumGoroutine. A
// goroutine that outlives its cycle stays, while the ones that come and go on
// their own (DTLS/SCTP retransmission timers in teardown, idle HTTP
// connections) do not: each count is the least seen while waiting for the
// baseline, and every cycle must come back to it exactly (leakProblem). A
// leak of one goroutine every few cycles therefore fails as surely as a big one.
func TestNoGoroutineLeak(t *testing.T) {
	before := leastGoroutines(0, time.Second)
	srv, stop := startStoppableServer(t, Options{})

	cycle := func(i int) {
		var cls []*client.Client
		for _, name := range []string{"A", "B", "C"} {
			cls = append(cls, dial(t, srv, "leak", fmt.Sprint(name, i), true))
		}
		for _, cl := range cls {
			var others []string
			for _, o := range cls {
				if o != cl {
					others = append(others, o.Snapshot().ID)
				}
			}
			waitFor(t, cl, "receives the others", 10*time.Second, receiving(others...))
		}
		cls[0].Leave()          // says goodbye
		cls[1].Close()          // drops the connection
		_ = cls[2].SendRaw(nil) // a fatal bad-message: the server closes it
		cls[2].Close()
		waitUntil(t, "the room to end", 5*time.Second, func() bool { return len(srv.Hub().Rooms()) == 0 })
	}

	cycle(0) // first use starts what lives as long as the server
	running := leastGoroutines(0, 2*time.Second)
	counts := make([]int, leakCycles)
	for i := range counts {
		cycle(i + 1)
		counts[i] = leastGoroutines(running, 10*time.Second)
	}
	t.Logf("goroutines: %d before the server, %d running after the first cycle, then after each cycle %v", before, running, counts)
	if err := leakProblem(running, counts); err != nil {
		t.Errorf("server running: %v; goroutines now:\n%s", err, goroutineProfile())
	}

	stop()
	if after := leastGoroutines(before, 10*time.Second); after > before {
		t.Errorf("after the server stopped: %d goroutines, want the %d before it started; still running:\n%s", after, before, goroutineProfile())
	}
}

// leakCycles is how many join/leave cycles are counted after the first.
const leakCycles = 8

// leakProblem judges the settled goroutine counts after each cycle against the
// count after the first: any excess is a goroutine that outlived its cycle.
func leakProblem(baseline int, counts []int) error {
	for i, n := range counts {
		if n > baseline {
			return fmt.Errorf("%d goroutines after cycle %d of %d, want the %d after the first cycle (all: %v)", n, i+1, len(counts), baseline, counts)
		}
	}
	return nil
}

// leakProblem fails a slow leak that a fixed slack of a few goroutines hid.
func TestLeakProblemFailsSlowLeaks(t *testing.T) {
	for _, c := range []struct {
		counts []int
		leak   bool
	}{
		{[]int{50, 50, 50, 50, 50, 50, 50, 50}, false},
		{[]int{49, 50, 48, 50, 50, 50, 50, 50}, false}, // below: something of the first cycle ended late
		{[]int{50, 50, 51, 51, 51, 51, 51, 51}, true},  // one goroutine, once
		{[]int{50, 51, 51, 52, 52, 53, 53, 54}, true},  // one every other cycle: +4 in 8
	} {
		if err := leakProblem(50, c.counts); (err != nil) != c.leak {
			t.Errorf("%v after a baseline of 50: leakProblem says %v, want a leak: %v", c.counts, err, c.leak)
		}
	}
}

// leastGoroutines polls the goroutine count until it is at most want or
// timeout has passed, and returns the least count seen: goroutines that end on
// their own are not counted, goroutines that stay are.
func leastGoroutines(want int, timeout time.Duration) int {
	least := runtime.NumGoroutine()
	for deadline := time.Now().Add(timeout); least > want && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond) // polling a count: there is nothing to wait on
		least = min(least, runtime.NumGoroutine())
	}
	return least
}

// settledGoroutines is the goroutine count once it stopped falling.
func settledGoroutines() int {
	n := runtime.NumGoroutine()
	for range 40 {
		time.Sleep(50 * time.Millisecond)
		m := runtime.NumGoroutine()
		if m >= n {
			return m
		}
		n = m
	}
	return n
}

func goroutineProfile() string {
	var b bytes.Buffer
	_ = pprof.Lookup("goroutine").WriteTo(&b, 1)
	return b.String()
}

func waitUntil(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startStoppableServer is startServer whose shutdown the test controls; stop
// waits for Serve to return and may be called more than once.
func startStoppableServer(t *testing.T, opts Options) (*Server, func()) {
	t.Helper()
	cfg := config.Default()
	cfg.HTTP, cfg.UDPPort, cfg.TCPPort = "127.0.0.1:0", 0, 0
	cfg.MediaIPs = []string{"127.0.0.1"}
	if opts.Client == nil {
		opts.Client = fstest.MapFS{"index.html": {Data: []byte("<!doctype html><title>podium</title>")}}
	}
	srv, err := New(cfg, opts, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("serve: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return srv, stop
}
