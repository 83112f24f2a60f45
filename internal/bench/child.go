// Package bench runs Podium's benchmarks end to end: a server in a child process
// (so the operating system accounts its CPU time and memory to it alone) and the
// load generator (internal/load) in this one. `podium bench forward` measures the
// forwarding cost on a standard scenario; `podium bench lastn` reproduces the Last N
// paper's experiments.
package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing/fstest"

	"github.com/podium-sfu/podium/internal/config"
	"github.com/podium-sfu/podium/internal/forward"
	"github.com/podium-sfu/podium/internal/server"
)

// ChildStats is what the child reports on each "stats" command.
type ChildStats struct {
	Meter forward.MeterSnapshot `json:"meter"`
	// From runtime.MemStats: allocations and frees counted since the start, the
	// heap, the number of GCs and the longest stop-the-world pause among the GCs
	// since the previous report.
	Mallocs      uint64 `json:"mallocs"`
	Frees        uint64 `json:"frees"`
	HeapAlloc    uint64 `json:"heap_alloc"`
	Sys          uint64 `json:"sys"`
	NumGC        uint32 `json:"num_gc"`
	PauseMaxNs   uint64 `json:"pause_max_ns"`   // since the previous report
	PauseTotalNs uint64 `json:"pause_total_ns"` // since the start
	Goroutines   int    `json:"goroutines"`
}

// childHello is the child's first line.
type childHello struct {
	URL string `json:"url"`
	PID int    `json:"pid"`
}

// ChildMain is the child process: `podium bench sfu [serve flags]`. It runs a
// server with a forward.Meter on the given configuration (environment ignored,
// so runs are reproducible), prints {"url","pid"} as its first line on out, then
// answers one line per command read from in:
//
//	stats               a ChildStats as JSON
//	meter               a ChildStats with only the meter (no runtime.ReadMemStats)
//	cpuprofile PATH     start a CPU profile (answers {"ok":true})
//	stopprofile         stop it
//	heapprofile PATH    write a heap profile
//
// It stops when in ends.
func ChildMain(args []string, in io.Reader, out io.Writer) error {
	cfg, err := config.Load(args, func(string) string { return "" })
	if err != nil {
		return err
	}
	level := slog.LevelWarn
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: max(level, slog.LevelWarn)}))
	meter := &forward.Meter{}
	srv, err := server.New(cfg, server.Options{
		Client: fstest.MapFS{"index.html": {Data: []byte("<!doctype html><title>podium bench</title>")}},
		Meter:  meter,
	}, log)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	enc := json.NewEncoder(out)
	url := "ws" + strings.TrimPrefix(srv.URL(), "http") + "ws"
	if err := enc.Encode(childHello{URL: url, PID: os.Getpid()}); err != nil {
		return err
	}
	var lastGC uint32
	var profile *os.File
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		cmd, arg, _ := strings.Cut(strings.TrimSpace(sc.Text()), " ")
		var reply any = map[string]bool{"ok": true}
		switch cmd {
		case "stats":
			reply = readStats(meter, &lastGC)
		case "meter": // cheap: no stop-the-world for memory statistics
			reply = ChildStats{Meter: meter.Snapshot()}
		case "cpuprofile":
			if profile != nil {
				reply = map[string]string{"error": "a profile is running"}
				break
			}
			f, err := os.Create(arg)
			if err == nil {
				err = pprof.StartCPUProfile(f)
			}
			if err != nil {
				reply = map[string]string{"error": err.Error()}
				break
			}
			profile = f
		case "stopprofile":
			if profile != nil {
				pprof.StopCPUProfile()
				_ = profile.Close()
				profile = nil
			}
		case "heapprofile":
			// A heap profile's allocation counts are as of the last
			// collection: one now makes two profiles' difference exact.
			runtime.GC()
			f, err := os.Create(arg)
			if err == nil {
				err = pprof.Lookup("heap").WriteTo(f, 0)
				_ = f.Close()
			}
			if err != nil {
				reply = map[string]string{"error": err.Error()}
			}
		default:
			reply = map[string]string{"error": fmt.Sprintf("unknown command %q", cmd)}
		}
		if err := enc.Encode(reply); err != nil {
			break
		}
	}
	if profile != nil {
		pprof.StopCPUProfile()
		_ = profile.Close()
	}
	cancel()
	return <-done
}

func readStats(m *forward.Meter, lastGC *uint32) ChildStats {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	s := ChildStats{
		Meter: m.Snapshot(), Mallocs: ms.Mallocs, Frees: ms.Frees, HeapAlloc: ms.HeapAlloc, Sys: ms.Sys,
		NumGC: ms.NumGC, PauseTotalNs: ms.PauseTotalNs, Goroutines: runtime.NumGoroutine(),
	}
	// PauseNs is a ring of the last 256 GCs' pauses; GC n's is at (n+255)%256.
	first := *lastGC + 1
	if ms.NumGC > 256 && first < ms.NumGC-255 {
		first = ms.NumGC - 255
	}
	for n := first; n <= ms.NumGC && n > 0; n++ {
		s.PauseMaxNs = max(s.PauseMaxNs, ms.PauseNs[(n+255)%256])
	}
	*lastGC = ms.NumGC
	return s
}
