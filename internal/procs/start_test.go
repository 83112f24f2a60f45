package procs

import (
	"io"
	"log/slog"
	"runtime"
	"testing"
	"time"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// run applies what the governor decides to the runtime: an idle test process
// whose quiet spell is already long enough drops to one processor at the
// first check.
func TestRunSetsTheRuntimesProcessors(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	g := newGovernor(2, 2)
	g.quietSince, g.fewest = time.Now().Add(-time.Hour), 1
	done, finished := make(chan struct{}), make(chan struct{})
	go func() { defer close(finished); run(quiet, g, done) }()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.GOMAXPROCS(0) != 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	close(done)
	<-finished
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Fatalf("GOMAXPROCS %d after the governor chose 1", got)
	}
}

// Stopping gives the runtime back the processors it started with; an
// operator's GOMAXPROCS keeps the governor out.
func TestStartLeavesTheProcessorsAsFound(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	t.Setenv("GOMAXPROCS", "") // whatever ran the tests set
	stop := Start(quiet)
	runtime.GOMAXPROCS(1) // as if the governor had dropped one
	stop()
	if got := runtime.GOMAXPROCS(0); got != 2 {
		t.Errorf("GOMAXPROCS %d after stop, want the 2 it started with", got)
	}
	t.Setenv("GOMAXPROCS", "2")
	stop = Start(quiet)
	runtime.GOMAXPROCS(1)
	stop()
	if got := runtime.GOMAXPROCS(0); got != 1 {
		t.Errorf("GOMAXPROCS %d: stop changed an operator's setting", got)
	}
}
