// Package memtrim gives back to the system the memory a burst of work left
// behind: the executable's pages that starting (and later, joining) touched,
// and the heap's garbage once the burst has settled.
//
// Starting touches code and tables all over the binary (every package's
// initialisation: the embedded NATS server, Prometheus, pion's tables), and
// the kernel maps 64 KiB around each page it faults in (fault-around) from
// the page cache: an idle server had 21 MB of its 42 MB binary resident.
// Unmapping the executable's read-only mappings (code, read-only data, the
// function tables) with MADV_DONTNEED drops those pages from the process;
// the page cache keeps them, and the next touch maps a page back with a
// minor fault. Writable mappings (data, bss) are never touched.
//
// Joins are such bursts too: DTLS handshakes, SDP and JSON allocate megabytes
// and run code the media path never uses. The Go runtime keeps the garbage
// until the heap reaches its goal (twice the live heap), which a quiet media
// path takes minutes to do, and keeps freed pages below that goal. So once the
// heap holds much more than it will need again soon (see settler), the
// server collects, returns the free pages and unmaps the executable again.
package memtrim

import (
	"context"
	"log/slog"
	"runtime/debug"
	"time"
)

const (
	// startupDelay is how long after the server starts serving its start-up
	// work (the NATS server's streams, the cluster's registry) is done.
	startupDelay = 3 * time.Second
	// checkEvery is how often the heap is looked at for a settled burst.
	checkEvery = 5 * time.Second
)

// Start unmaps the executable's startup pages once the server has settled,
// then returns what later bursts leave behind (see settler); stop ends it.
func Start(log *slog.Logger) (stop func()) {
	done := make(chan struct{})
	go run(log, done)
	return func() { close(done) }
}

func run(log *slog.Logger, done <-chan struct{}) {
	select {
	case <-done:
		return
	case <-time.After(startupDelay):
	}
	trimExecutable(log, slog.LevelInfo, "unmapped the binary's pages touched while starting; serving maps back what it uses")
	s := settler{}
	s.due(readSample(time.Now())) // the baseline
	tick := time.NewTicker(checkEvery)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case now := <-tick.C:
			before := readSample(now)
			if !s.due(before) {
				continue
			}
			trimHeap()
			after := readSample(time.Now())
			log.Debug("returned the heap a burst left behind", "held_mb", mb(before.held), "now_mb", mb(after.held), "live_mb", mb(after.live))
			trimExecutable(log, slog.LevelDebug, "unmapped the binary's pages the burst touched")
		}
	}
}

// trimHeap collects, then returns every free page to the system.
func trimHeap() { debug.FreeOSMemory() }

func trimExecutable(log *slog.Logger, level slog.Level, done string) {
	n, err := ExecutablePages()
	if err != nil {
		log.Warn("the binary's pages stay mapped", "err", err)
		return
	}
	if n > 0 {
		log.Log(context.Background(), level, done, "resident_mb", mb(n))
	}
}

func mb(n uint64) float64 { return float64(n) / (1 << 20) }
