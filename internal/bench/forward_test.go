package bench

import (
	"context"
	"os"
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
			res, err := Forward(ctx, ForwardOptions{
				Scenario: name, Warmup: 2 * time.Second, Duration: 3 * time.Second,
				Command: childCommand, Progress: testWriter{t}, Seed: 1,
				CPUProfile: t.TempDir() + "/cpu.pprof",
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("\n%s%s", res.Summary(), res.Line())
			kv := parseLine(t, res.Line())
			for _, k := range []string{"cpu_us_per_pkt", "pkts_per_s", "p99_latency_us", "allocs_per_pkt", "gc_pause_max_us", "rss_mb"} {
				if _, err := strconv.ParseFloat(kv[k], 64); err != nil {
					t.Errorf("%s=%q in the last line", k, kv[k])
				}
			}
			if kv["scenario"] != name {
				t.Errorf("scenario=%q", kv["scenario"])
			}
			if res.PacketsPerS <= 0 || res.CPUMicros <= 0 || res.LatencySamples == 0 || res.RSS == 0 {
				t.Errorf("empty figures: %+v", res)
			}
			if fi, err := os.Stat(t.TempDir()); err != nil || fi == nil {
				t.Error(err)
			}
		})
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(b), "\n"))
	return len(b), nil
}
