package metrics

import (
	"math"
	"runtime"
	"strings"
	"sync"
	"testing"
)

func TestWriterFormat(t *testing.T) {
	var b strings.Builder
	w := NewWriter(&b)
	w.Family("podium_rooms", Gauge, "Rooms with at least one participant.")
	w.Sample("podium_rooms", 3)
	w.Family("podium_packets_total", Counter, "Packets\nwith \\ odd help.")
	w.Sample("podium_packets_total", 12345678901, "kind", "video", "note", "a \"quoted\"\nback\\slash")
	w.Sample("podium_packets_total", 0.25, "kind", "audio")
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	want := `# HELP podium_rooms Rooms with at least one participant.
# TYPE podium_rooms gauge
podium_rooms 3
# HELP podium_packets_total Packets\nwith \\ odd help.
# TYPE podium_packets_total counter
podium_packets_total{kind="video",note="a \"quoted\"\nback\\slash"} 12345678901
podium_packets_total{kind="audio"} 0.25
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	s, err := Parse(b.String())
	if err != nil {
		t.Fatal(err)
	}
	if s.Sum("podium_packets_total") != 12345678901.25 || s["podium_rooms"] != 3 || !s.Has("podium_rooms") || s.Has("podium_room") {
		t.Errorf("parsed %v", s)
	}
}

func TestFormatValue(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 1: "1", -2: "-2", 1.5: "1.5", 1e20: "1e+20", math.Inf(1): "+Inf", math.Inf(-1): "-Inf"} {
		if got := FormatValue(v); got != want {
			t.Errorf("FormatValue(%v) = %s, want %s", v, got, want)
		}
	}
	if FormatValue(math.NaN()) != "NaN" {
		t.Error("NaN")
	}
}

func TestHistogram(t *testing.T) {
	h := NewHist(1, 10, 100)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, v := range []float64{0.5, 1, 5, 50, 500} {
				h.Observe(v)
			}
		}()
	}
	wg.Wait()
	s := h.Snapshot()
	if s.Count != 20 || s.Sum != 4*556.5 || s.Counts[0] != 8 || s.Counts[1] != 4 || s.Counts[2] != 4 {
		t.Fatalf("snapshot %+v", s)
	}
	var b strings.Builder
	w := NewWriter(&b)
	w.Family("x_bps", Histogram, "h")
	w.Histogram("x_bps", s, "dir", "in")
	_ = w.Flush()
	got, err := Parse(b.String())
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]float64{`x_bps_bucket{dir="in",le="1"}`: 8, `x_bps_bucket{dir="in",le="10"}`: 12,
		`x_bps_bucket{dir="in",le="100"}`: 16, `x_bps_bucket{dir="in",le="+Inf"}`: 20, `x_bps_count{dir="in"}`: 20, `x_bps_sum{dir="in"}`: 2226} {
		if got[k] != v {
			t.Errorf("%s = %v, want %v\n%s", k, got[k], v, b.String())
		}
	}
	if n := testing.AllocsPerRun(100, func() { h.Observe(3) }); n != 0 {
		t.Errorf("Observe allocates %v", n)
	}
}

func TestRuntime(t *testing.T) {
	runtime.GC()
	var b strings.Builder
	w := NewWriter(&b)
	WriteRuntime(w)
	_ = w.Flush()
	s, err := Parse(b.String())
	if err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	if s["go_goroutines"] < 1 || s["go_gc_cycles_total"] < 1 || s[`go_gc_pause_seconds_bucket{le="+Inf"}`] < 1 ||
		s["go_gc_pause_seconds_count"] != s[`go_gc_pause_seconds_bucket{le="+Inf"}`] || s["go_heap_objects_bytes"] <= 0 {
		t.Errorf("runtime metrics:\n%s", b.String())
	}
}

func TestParseRejects(t *testing.T) {
	for _, bad := range []string{
		"x 1\n", // no TYPE
		"# TYPE x gauge\nx{a=\"1\" 2\n",
		"# TYPE x gauge\nx{a=1} 2\n",
		"# TYPE x gauge\nx one\n",
		"# TYPE x gauge\nx 1\nx 2\n",
		"# TYPE x gauge\n# TYPE x gauge\n",
		"# TYPE 1x gauge\n",
	} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}
