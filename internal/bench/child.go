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
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"strings"
	"testing/fstest"
	"time"

	"github.com/podium-sfu/podium/internal/config"
	"github.com/podium-sfu/podium/internal/forward"
	"github.com/podium-sfu/podium/internal/memtrim"
	"github.com/podium-sfu/podium/internal/procs"
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
	StopMaxNs    uint64 `json:"stop_max_ns"`    // of those GCs, the longest stopping the world (gcStops)
	PauseTotalNs uint64 `json:"pause_total_ns"` // since the start
	Goroutines   int    `json:"goroutines"`
	Procs        int    `json:"procs"` // GOMAXPROCS now (internal/procs sizes it to the work)
	// The cluster relay's datagram bytes sent and accepted (0 without one).
	RelaySentBytes     uint64 `json:"relay_sent_bytes"`
	RelayReceivedBytes uint64 `json:"relay_received_bytes"`
}

// childHello is the child's first line.
type childHello struct {
	URL  string `json:"url"`
	PID  int    `json:"pid"`
	Node string `json:"node,omitempty"` // its cluster node id, when clustered
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
//	trace PATH          start a Go execution trace (runtime/trace)
//	stoptrace           stop it
//	heapprofile PATH    write a heap profile
//	cluster N           wait (up to 60 s) until the cluster's JetStream is
//	                    ready and its registry lists N healthy nodes
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
	defer memtrim.Start(log)() // as podium serve does
	defer procs.Start(log)()
	enc := json.NewEncoder(out)
	url := "ws" + strings.TrimPrefix(srv.URL(), "http") + "ws"
	hello := childHello{URL: url, PID: os.Getpid()}
	if srv.Node() != nil {
		hello.Node = srv.Node().ID()
	}
	if err := enc.Encode(hello); err != nil {
		return err
	}
	var lastGC uint32
	var stops gcStops
	profile, tracing := recording{what: "a profile"}, recording{what: "a trace"}
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		cmd, arg, _ := strings.Cut(strings.TrimSpace(sc.Text()), " ")
		var reply any = map[string]bool{"ok": true}
		switch cmd {
		case "stats":
			st := readStats(meter, &lastGC)
			st.StopMaxNs = uint64(stops.maxSince() * 1e9)
			if t := srv.Relay(); t != nil {
				st.RelaySentBytes, st.RelayReceivedBytes = t.Stats().SentBytes.Load(), t.Stats().ReceivedBytes.Load()
			}
			reply = st
		case "cluster":
			if err := waitCluster(srv, arg); err != nil {
				reply = map[string]string{"error": err.Error()}
			}
		case "meter": // cheap: no stop-the-world for memory statistics
			reply = ChildStats{Meter: meter.Snapshot()}
		case "cpuprofile":
			if err := profile.start(arg, pprof.StartCPUProfile, pprof.StopCPUProfile); err != nil {
				reply = map[string]string{"error": err.Error()}
			}
		case "stopprofile":
			profile.finish()
		case "trace":
			if err := tracing.start(arg, trace.Start, trace.Stop); err != nil {
				reply = map[string]string{"error": err.Error()}
			}
		case "stoptrace":
			tracing.finish()
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
	profile.finish()
	tracing.finish()
	cancel()
	return <-done
}

// waitCluster waits until srv's cluster is ready and lists n healthy nodes.
func waitCluster(srv *server.Server, n string) error {
	want, err := strconv.Atoi(n)
	if err != nil || srv.Node() == nil {
		return fmt.Errorf("cluster %q: want a node count, on a clustered server", n)
	}
	deadline := time.After(60 * time.Second)
	select {
	case <-srv.Node().Ready():
	case <-deadline:
		return errors.New("the cluster's JetStream is not ready after 60 s")
	}
	for srv.Node().HealthyNodes(time.Now()) != want {
		select {
		case <-deadline:
			return fmt.Errorf("the registry lists %d healthy nodes, not %d, after 60 s", srv.Node().HealthyNodes(time.Now()), want)
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}

func readStats(m *forward.Meter, lastGC *uint32) ChildStats {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	s := ChildStats{
		Meter: m.Snapshot(), Mallocs: ms.Mallocs, Frees: ms.Frees, HeapAlloc: ms.HeapAlloc, Sys: ms.Sys,
		NumGC: ms.NumGC, PauseTotalNs: ms.PauseTotalNs, Goroutines: runtime.NumGoroutine(),
		Procs: runtime.GOMAXPROCS(0),
	}
	s.PauseMaxNs = pauseMaxSince(&ms, lastGC)
	return s
}

// pauseMaxSince is the longest pause of the collections after *lastGC (in
// nanoseconds, 0 for none), and moves *lastGC to the latest.
func pauseMaxSince(ms *runtime.MemStats, lastGC *uint32) uint64 {
	// PauseNs is a ring of the last 256 GCs' pauses; GC n's is at (n+255)%256.
	first := *lastGC + 1
	if ms.NumGC > 256 && first < ms.NumGC-255 {
		first = ms.NumGC - 255
	}
	var longest uint64
	for n := first; n <= ms.NumGC && n > 0; n++ {
		longest = max(longest, ms.PauseNs[(n+255)%256])
	}
	*lastGC = ms.NumGC
	return longest
}

// recording is a CPU profile or an execution trace being written to its file.
type recording struct {
	what string // for the error when one is already running
	f    *os.File
	end  func()
}

// start writes the recording begin starts into a new file at path until
// finish calls end.
func (r *recording) start(path string, begin func(io.Writer) error, end func()) error {
	if r.f != nil {
		return fmt.Errorf("%s is running", r.what)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := begin(f); err != nil {
		_ = f.Close()
		return err
	}
	r.f, r.end = f, end
	return nil
}

// finish ends the recording, if one runs, and closes its file.
func (r *recording) finish() {
	if r.f != nil {
		r.end()
		_ = r.f.Close()
		r.f = nil
	}
}
