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
// go.uber.org/goleak is not in go.mod, so this compares runtime.NumGoroutine with
// a small tolerance (timers and pion's shared background work come and go) and
// prints the goroutine profile when the count does not come back.
func TestNoGoroutineLeak(t *testing.T) {
	before := runtime.NumGoroutine()
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
	running := settledGoroutines()
	for i := 1; i <= 4; i++ {
		cycle(i)
	}
	expectGoroutines(t, "after 4 join/leave cycles, server running", running, 10*time.Second)

	stop()
	expectGoroutines(t, "after the server stopped", before, 10*time.Second)
}

// leakTolerance absorbs goroutines that come and go on their own (timer-driven
// retransmission in DTLS/SCTP teardown, the HTTP server's idle connections).
const leakTolerance = 3

// expectGoroutines waits until at most want+leakTolerance goroutines run.
func expectGoroutines(t *testing.T, when string, want int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	n := runtime.NumGoroutine()
	for n > want+leakTolerance && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond) // polling a count: there is nothing to wait on
		n = runtime.NumGoroutine()
	}
	t.Logf("%s: %d goroutines (baseline %d)", when, n, want)
	if n > want+leakTolerance {
		var profile bytes.Buffer
		_ = pprof.Lookup("goroutine").WriteTo(&profile, 1)
		t.Errorf("%s: %d goroutines, want at most %d+%d; still running:\n%s", when, n, want, leakTolerance, profile.String())
	}
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
