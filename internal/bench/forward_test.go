package bench

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/podium-sfu/podium/internal/load"
)

// parseLine reads a key=value line.
func parseLine(t *testing.T, line string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, kv := range strings.Fields(line) {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			t.Fatalf("%q is not key=value", kv)
		}
		out[k] = v
	}
	return out
}

// The forwarding benchmark in a short mode, so it cannot rot: every standard
// scenario for a few seconds, checking the figures are there and sane rather
// than fast (the machine running tests is busy).
func TestForwardBenchShort(t *testing.T) {
	scenarios := load.Scenarios()
	if testing.Short() {
		scenarios = scenarios[:1]
	}
	for _, name := range scenarios {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			profile := t.TempDir() + "/cpu.pprof"
			res, err := Forward(ctx, ForwardOptions{
				Scenario: name, Warmup: 2 * time.Second, Duration: 3 * time.Second,
				Command: childCommand, Progress: testWriter{t}, Seed: 1,
				CPUProfile: profile, FloorDuration: time.Second, FloorCommand: floorChildCommand,
			})
			// Seconds are too short for the estimate to settle on a busy
			// machine: the scenario may not hold, the figures must be there.
			var held *ScenarioError
			if err != nil && !errors.As(err, &held) {
				t.Fatal(err)
			}
			t.Logf("\n%s%s\n%v", res.Summary(), res.Line(), err)
			kv := parseLine(t, res.Line())
			for _, k := range []string{"cpu_us_per_pkt", "user_us_per_pkt", "sys_us_per_pkt", "pkts_per_s", "p99_latency_us", "allocs_per_pkt",
				"gc_pause_max_us", "rss_mb", "floor_us_per_pkt", "x_floor", "nominal_pkts_per_s"} {
				if _, err := strconv.ParseFloat(kv[k], 64); err != nil {
					t.Errorf("%s=%q in the last line", k, kv[k])
				}
			}
			if kv["scenario"] != name {
				t.Errorf("scenario=%q", kv["scenario"])
			}
			if res.PacketsPerS <= 0 || res.CPUMicros <= 0 || res.LatencySamples == 0 || res.RSS == 0 || res.Floor.CPUMicros <= 0 || res.XFloor <= 0 {
				t.Errorf("empty figures: %+v", res)
			}
			if err := checkServerProfile(profile); err != nil {
				t.Errorf("--cpuprofile: %v", err)
			}
		})
	}
}

// serverFrame starts the names of the functions every profile of the server's
// forwarding shows (the forwarding package's, whichever path the packets take).
const serverFrame = "podium/internal/forward.("

// checkServerProfile reports whether path holds a CPU profile (gzipped
// protobuf, whose string table names the sampled functions) of the server
// forwarding packets.
func checkServerProfile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("%s is not a pprof profile: %w", path, err)
	}
	b, err := io.ReadAll(z)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if !bytes.Contains(b, []byte(serverFrame)) {
		return fmt.Errorf("%s (%d bytes unpacked) has no sample in %s: not a profile of the server forwarding", path, len(b), serverFrame)
	}
	return nil
}

// checkServerProfile refuses what a broken --cpuprofile would leave.
func TestCheckServerProfileRefuses(t *testing.T) {
	dir := t.TempDir()
	empty := dir + "/empty.pprof"
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	idle := dir + "/idle.pprof" // a valid profile of a process that forwards nothing
	f, err := os.Create(idle)
	if err != nil {
		t.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		t.Fatal(err)
	}
	pprof.StopCPUProfile()
	_ = f.Close()
	for _, path := range []string{dir + "/missing.pprof", empty, idle} {
		if err := checkServerProfile(path); err == nil {
			t.Errorf("%s accepted as a profile of the server forwarding", path)
		}
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}

// --sfu-procs reaches the server child as its GOMAXPROCS.
func TestSFUProcsSetsTheChildsGOMAXPROCS(t *testing.T) {
	base := func(args []string) *exec.Cmd { return exec.Command("podium", args...) }
	if cmd := withProcs(base, 0)([]string{"bench", "sfu"}); cmd.Env != nil {
		t.Errorf("with 0 the child's environment was set: %v", cmd.Env)
	}
	cmd := withProcs(base, 1)([]string{"bench", "sfu"})
	if !slices.Contains(cmd.Env, "GOMAXPROCS=1") || cmd.Args[1] != "bench" {
		t.Errorf("with 1: args %v, environment without GOMAXPROCS=1", cmd.Args)
	}
}
