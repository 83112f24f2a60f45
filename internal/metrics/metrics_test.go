package metrics

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

func gather(t *testing.T, reg *prometheus.Registry) map[string]*dto.MetricFamily {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, f := range families {
		out[f.GetName()] = f
	}
	return out
}

// TestRegistry: the standard Go and process families and the old runtime names
// are all there, without a clash.
func TestRegistry(t *testing.T) {
	runtime.GC()
	reg, err := NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	got := gather(t, reg)
	for _, name := range []string{"go_gc_duration_seconds", "go_goroutines", "go_info", "go_memstats_heap_alloc_bytes",
		"process_cpu_seconds_total", "process_resident_memory_bytes", "process_open_fds"} {
		if got[name] == nil {
			t.Errorf("%s missing", name)
		}
	}
	one := func(name string) *dto.Metric {
		f := got[name]
		if f == nil || len(f.Metric) != 1 {
			t.Fatalf("%s: %v", name, f)
		}
		return f.Metric[0]
	}
	if n := one("go_gc_cycles_total").GetCounter().GetValue(); n < 1 {
		t.Errorf("go_gc_cycles_total %v after a GC", n)
	}
	if one("go_heap_objects_bytes").GetGauge().GetValue() <= 0 || one("go_memory_total_bytes").GetGauge().GetValue() <= 0 {
		t.Error("memory gauges are 0")
	}
	h := one("go_gc_pause_seconds").GetHistogram()
	if h.GetSampleCount() < 1 || len(h.Bucket) != len(gcPauseBounds) {
		t.Fatalf("go_gc_pause_seconds %v", h)
	}
	var last uint64
	for _, b := range h.Bucket {
		if b.GetCumulativeCount() < last || b.GetCumulativeCount() > h.GetSampleCount() {
			t.Errorf("buckets not cumulative: %v", h)
		}
		last = b.GetCumulativeCount()
	}
}

// TestRegistryRefusesClashes: a collector reusing a standard name is an error
// at start-up, not a broken scrape.
func TestRegistryRefusesClashes(t *testing.T) {
	dup := prometheus.NewGauge(prometheus.GaugeOpts{Name: "go_goroutines", Help: "again"})
	if _, err := NewRegistry(dup); err == nil {
		t.Error("a second go_goroutines was accepted")
	}
}

func TestHandlerToken(t *testing.T) {
	reg, err := NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	const token = "scrape-0123456789abcdef"
	for _, tt := range []struct {
		token, auth string
		status      int
	}{
		{"", "", 200},
		{"", "Bearer anything", 200},
		{token, "", 401},
		{token, "Bearer wrong-0123456789abcdef", 401},
		{token, "Bearer " + token[:len(token)-1], 401},
		{token, "Bearer " + token + "x", 401},
		{token, "Basic " + token, 401},
		{token, token, 401},
		{token, "Bearer " + token, 200},
		{token, "bearer " + token, 200}, // schemes are case-insensitive (RFC 9110)
		{token, "BEARER  " + token, 200},
	} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", "/metrics", nil)
		if tt.auth != "" {
			req.Header.Set("Authorization", tt.auth)
		}
		Handler(reg, tt.token, log).ServeHTTP(rec, req)
		if rec.Code != tt.status {
			t.Errorf("token %q, Authorization %q: %d, want %d", tt.token, tt.auth, rec.Code, tt.status)
			continue
		}
		if rec.Code == http.StatusUnauthorized {
			if rec.Header().Get("WWW-Authenticate") == "" || strings.Contains(rec.Body.String(), "go_goroutines") {
				t.Errorf("401 without a challenge, or with metrics: %v %q", rec.Header(), rec.Body)
			}
			continue
		}
		parser := expfmt.NewTextParser(model.UTF8Validation)
		families, err := parser.TextToMetricFamilies(rec.Body)
		if err != nil || families["go_goroutines"] == nil {
			t.Errorf("exposition: %v", err)
		}
	}
}
