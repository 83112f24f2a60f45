package procs

import (
	"log/slog"
	"os"
	"runtime"
	"syscall"
	"time"

	"github.com/podium-sfu/podium/internal/gridclock"
)

// checkEvery is how often the process's CPU time is read: a burst gets its
// processor within this.
const checkEvery = 250 * time.Millisecond

// Start lets the governor set GOMAXPROCS between 1 and what the runtime
// chose (the cores, or the container's quota); stop ends it and restores
// that. An operator's GOMAXPROCS in the environment is left alone.
func Start(log *slog.Logger) (stop func()) {
	if os.Getenv("GOMAXPROCS") != "" {
		log.Debug("GOMAXPROCS set by the environment: the processors stay as set")
		return func() {}
	}
	limit := runtime.GOMAXPROCS(0)
	if limit <= 1 {
		return func() {}
	}
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		run(log, newGovernor(limit, limit), done)
	}()
	return func() {
		close(done)
		<-finished
		runtime.GOMAXPROCS(limit)
	}
}

// run samples on checkEvery's grid (gridclock.Every), whose points the shared
// clock's rounds fall on too: the samples cost the server no wake-up of their own.
func run(log *slog.Logger, g *governor, done <-chan struct{}) {
	g.next(time.Now(), CPUTime())
	gridclock.Every(done, checkEvery, func() {
		was := g.procs
		if procs := g.next(time.Now(), CPUTime()); procs != was {
			runtime.GOMAXPROCS(procs) // stops the world briefly; rare (quietFor)
			log.Debug("processors sized to the work", "gomaxprocs", procs, "was", was)
		}
	})
}

// CPUTime is the process's user and system CPU time so far.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
