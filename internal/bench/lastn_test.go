package bench

import (
	"context"
	"encoding/csv"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The Last N reproduction in a short mode, so it cannot rot: a conference of 4
// endpoints and the observer, full star against Last N = 1 and 2, pausing on and
// off, a couple of seconds each. It checks the stream counts the paper's formulas
// give and that the files are written, not the paper's percentages (those need
// K = 30 and minutes: docs/lastn.md).
func TestLastNBenchShort(t *testing.T) {
	const k = 4
	o := LastNOptions{
		Ks: []int{k}, Ns: []int{-1, 1}, PausingK: k, PausingNs: []int{-1, 2, 1},
		Warmup: 1500 * time.Millisecond, Duration: 2 * time.Second, DTX: true,
		OutDir: t.TempDir(), Command: childCommand, Progress: testWriter{t}, Seed: 1,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	points, err := LastN(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(points) != 6 {
		t.Fatalf("%d points, want 3 with pausing and 3 without", len(points))
	}
	for _, p := range points {
		want := k * k // full star: K−1 for each endpoint, K for the observer
		if p.N >= 0 {
			want = (k + 1) * p.N
		}
		if p.ExpectedStreams != want {
			t.Errorf("K=%d N=%s: expected %d video streams, the formula says %d", p.K, nName(p.N), p.ExpectedStreams, want)
		}
		if p.VideoStreams != want {
			t.Errorf("K=%d N=%s pausing=%v: %d video streams received, want %d", p.K, nName(p.N), p.Pausing, p.VideoStreams, want)
		}
		wantPaused := 0
		if p.Pausing && p.N >= 0 {
			wantPaused = k - p.N - 1
		}
		if p.PausedPublishers != wantPaused {
			t.Errorf("K=%d N=%s pausing=%v: %d senders paused, want %d", p.K, nName(p.N), p.Pausing, p.PausedPublishers, wantPaused)
		}
		if p.OutMbps <= 0 || p.InMbps <= 0 {
			t.Errorf("K=%d N=%s: no traffic measured: %+v", p.K, nName(p.N), p)
		}
	}
	full, _ := find(points, k, -1, true)
	one, _ := find(points, k, 1, true)
	if one.OutMbps >= full.OutMbps {
		t.Errorf("Last N = 1 sends %.2f Mbit/s, the full star %.2f", one.OutMbps, full.OutMbps)
	}
	for _, name := range []string{"lastn.csv", "lastn-outbound.svg", "lastn-pausing-bitrate.svg", "lastn-pausing-cpu.svg", "lastn-summary.md"} {
		if fi, err := os.Stat(filepath.Join(o.OutDir, name)); err != nil || fi.Size() == 0 {
			t.Errorf("%s not written: %v", name, err)
		}
	}
	summary, _ := os.ReadFile(filepath.Join(o.OutDir, "lastn-summary.md"))
	t.Logf("\n%s", summary)
}

func TestLastNOutputs(t *testing.T) {
	o := DefaultLastN()
	var points []Point
	// A synthetic run: bitrate proportional to the video streams sent.
	for _, k := range o.Ks {
		for _, n := range o.Ns {
			streams := k * k
			if n >= 0 {
				streams = (k + 1) * n
			}
			points = append(points, Point{Experiment: "bitrate", K: k, N: n, Pausing: true, OutMbps: float64(streams) / 10, AggMbps: float64(streams+k) / 10, CPU: float64(streams) / 20, VideoStreams: streams})
		}
	}
	for _, n := range o.PausingNs {
		for _, pausing := range []bool{true, false} {
			if _, ok := find(points, 30, n, pausing); ok {
				continue
			}
			points = append(points, Point{Experiment: "pausing", K: 30, N: n, Pausing: pausing, OutMbps: 10, AggMbps: 12, CPU: 30})
		}
	}
	dir := t.TempDir()
	if err := WriteLastN(dir, o, points); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"lastn-outbound.svg", "lastn-pausing-bitrate.svg", "lastn-pausing-cpu.svg"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := xml.Unmarshal(b, new(struct{})); err != nil {
			t.Errorf("%s is not well-formed XML: %v", name, err)
		}
		if !strings.Contains(string(b), "<polyline") {
			t.Errorf("%s has no lines", name)
		}
	}
	f, err := os.Open(filepath.Join(dir, "lastn.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil || len(rows) != len(points)+1 {
		t.Fatalf("csv: %d rows, %v", len(rows), err)
	}
	summary := LastNSummary(o, points)
	// With bitrate proportional to streams: 1 − 31·8/30² = 72.4 %.
	for _, want := range []string{"| 8 | 72 % | 72.4 %", "| 5 | 82 % | 82.8 %", "| 3 | 89 % | 89.7 %", "Video pausing at K = 30, N = 8"} {
		if !strings.Contains(summary, want) {
			t.Errorf("summary lacks %q:\n%s", want, summary)
		}
	}
}

func TestNiceStep(t *testing.T) {
	for raw, want := range map[float64]float64{0.7: 1, 1.3: 2, 3: 5, 7: 10, 23: 50, 0: 1} {
		if got := niceStep(raw); got != want {
			t.Errorf("niceStep(%v) = %v, want %v", raw, got, want)
		}
	}
}
