package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/podium-sfu/podium/internal/config"
)

// samples maps a sample's name with its labels, sorted
// (`podium_packets_dropped_total{kind="video",reason="layer"}`), to its value.
type samples map[string]float64

// Has reports whether some sample of the metric name exists.
func (s samples) Has(name string) bool {
	for k := range s {
		if k == name || strings.HasPrefix(k, name+"{") {
			return true
		}
	}
	return false
}

func scrape(t *testing.T, srv *Server) samples {
	t.Helper()
	return scrapeURL(t, srv.MetricsURL(), "")
}

// scrapeURL GETs /metrics (with a bearer token, if given) and parses it with
// Prometheus's own parser, which refuses what a scraper would.
func scrapeURL(t *testing.T, url, token string) samples {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || expfmt.ResponseFormat(resp.Header).FormatType() != expfmt.TypeTextPlain {
		t.Fatalf("/metrics: %d %s\n%s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("/metrics is not a valid exposition: %v\n%s", err, b)
	}
	vector, err := expfmt.ExtractSamples(&expfmt.DecodeOptions{}, slices.Collect(maps.Values(families))...)
	if err != nil {
		t.Fatal(err)
	}
	out := samples{}
	for _, v := range vector {
		var labels []string
		for name, value := range v.Metric {
			if name != model.MetricNameLabel {
				labels = append(labels, fmt.Sprintf("%s=%q", name, value))
			}
		}
		key := string(v.Metric[model.MetricNameLabel])
		if len(labels) > 0 {
			slices.Sort(labels)
			key += "{" + strings.Join(labels, ",") + "}"
		}
		if _, dup := out[key]; dup {
			t.Fatalf("sample %s twice", key)
		}
		out[key] = float64(v.Value)
	}
	return out
}

// TestMetricsDuringACall: a real three-party call; /metrics is scraped twice, a
// second apart, and once more after everyone left. Every family is there, the
// gauges describe the call, and the counters move while media flows and never
// go back when the room ends.
func TestMetricsDuringACall(t *testing.T) {
	srv := startServer(t, Options{})
	before := scrape(t, srv)
	a := dial(t, srv, "metrics", "A", true)
	b := dial(t, srv, "metrics", "B", true)
	c := dial(t, srv, "metrics", "C", true)
	ids := []string{a.Snapshot().ID, b.Snapshot().ID, c.Snapshot().ID}
	waitFor(t, a, "A receives B and C", 10*time.Second, receiving(ids[1], ids[2]))
	waitFor(t, b, "B receives A and C", 10*time.Second, receiving(ids[0], ids[2]))
	waitFor(t, c, "C receives A and B", 10*time.Second, receiving(ids[0], ids[1]))

	first := scrape(t, srv)
	time.Sleep(time.Second) // media flows: 50 audio packets and 30 frames per sender
	second := scrape(t, srv)

	for name, want := range map[string]float64{
		"podium_rooms": 1, "podium_participants": 3, "podium_signaling_connections": 3,
		`podium_tracks{kind="audio"}`: 3, `podium_tracks{kind="video"}`: 3,
		`podium_forwarded_streams{kind="audio"}`: 6, `podium_forwarded_streams{kind="video"}`: 6,
		"podium_joins_total": 3, "podium_dev_mode": 1, "podium_draining": 0, "podium_up": 1,
	} {
		if got, ok := second[name]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", name, got, ok, want)
		}
	}
	// Each receiver's estimate is observed every RTT sample (2 s) once its
	// transport-wide feedback flows: present from the start, counted later.
	if _, ok := second["podium_receiver_estimate_bps_count"]; !ok {
		t.Error("podium_receiver_estimate_bps_count missing")
	}
	for _, name := range []string{
		`podium_packets_received_total{kind="audio"}`, `podium_packets_received_total{kind="video"}`,
		`podium_bytes_received_total{kind="audio"}`, `podium_bytes_received_total{kind="video"}`,
		`podium_packets_sent_total{kind="audio"}`, `podium_packets_sent_total{kind="video"}`,
		`podium_bytes_sent_total{kind="audio"}`, `podium_bytes_sent_total{kind="video"}`,
	} {
		if second[name] <= first[name] || first[name] <= before[name] {
			t.Errorf("%s did not move: %v, %v, %v", name, before[name], first[name], second[name])
		}
	}
	if first["podium_signaling_messages_total"] <= before["podium_signaling_messages_total"] {
		t.Errorf("signaling messages did not move: %v", first["podium_signaling_messages_total"])
	}
	// Forwarding to two receivers each: about twice what arrives.
	delta := func(name string) float64 { return second[name] - first[name] }
	if in, out := delta(`podium_packets_received_total{kind="audio"}`), delta(`podium_packets_sent_total{kind="audio"}`); out < 1.6*in || out > 2.4*in {
		t.Errorf("audio in the second between scrapes: %v packets in, %v out; want about 2× (two receivers per sender)", in, out)
	}
	if second[`podium_keyframes_received_total{kind="video"}`] < 3 || second[`podium_keyframe_requests_total{direction="to-publishers"}`] < 1 {
		t.Errorf("keyframes %v, requests to publishers %v", second[`podium_keyframes_received_total{kind="video"}`],
			second[`podium_keyframe_requests_total{direction="to-publishers"}`])
	}
	for _, family := range []string{
		"podium_nacks_received_total", "podium_retransmissions_total", "podium_keyframe_requests_total",
		"podium_packets_dropped_total", "podium_receiver_estimate_bps_bucket", "podium_signaling_errors_total",
		"go_goroutines", "go_gc_pause_seconds_bucket", "go_gc_pause_seconds_count", "go_heap_objects_bytes", "podium_start_time_seconds",
		"go_gc_duration_seconds", "process_cpu_seconds_total", "process_resident_memory_bytes",
	} {
		if !second.Has(family) {
			t.Errorf("family %s missing", family)
		}
	}
	for _, reason := range []string{"malformed", "padding", "unwanted-encoding", "muted", "not-negotiated", "layer", "send-error"} {
		if _, ok := second[`podium_packets_dropped_total{kind="video",reason="`+reason+`"}`]; !ok {
			t.Errorf("no drop counter for %s", reason)
		}
	}

	// The room ends: gauges fall, counters keep what they counted.
	for _, cl := range []interface{ Leave() }{a, b, c} {
		cl.Leave()
	}
	waitUntil(t, "the room to end", 10*time.Second, func() bool { return len(srv.Hub().Rooms()) == 0 })
	after := scrape(t, srv)
	if after["podium_rooms"] != 0 || after["podium_participants"] != 0 {
		t.Errorf("after the call: rooms %v participants %v", after["podium_rooms"], after["podium_participants"])
	}
	for name, v := range second {
		if strings.HasSuffix(strings.SplitN(name, "{", 2)[0], "_total") && strings.HasPrefix(name, "podium_") && after[name] < v {
			t.Errorf("counter %s went back from %v to %v when the room ended", name, v, after[name])
		}
	}
}

// TestMetricsNames: a fresh server's /metrics, over HTTP, has every family the
// README names (dashboards use them), with Prometheus's standard Go and process
// families beside them.
func TestMetricsNames(t *testing.T) {
	srv := startServer(t, Options{})
	got := scrape(t, srv)
	for _, name := range []string{
		"podium_up", "podium_start_time_seconds", "podium_dev_mode", "podium_draining",
		"podium_rooms", "podium_participants", "podium_signaling_connections",
		`podium_tracks{kind="audio"}`, `podium_tracks{kind="video"}`,
		`podium_forwarded_streams{kind="audio"}`, `podium_forwarded_streams{kind="video"}`,
		`podium_packets_received_total{kind="video"}`, `podium_bytes_received_total{kind="audio"}`,
		`podium_packets_sent_total{kind="video"}`, `podium_bytes_sent_total{kind="audio"}`,
		`podium_keyframes_received_total{kind="video"}`, `podium_nacks_received_total{kind="video"}`,
		`podium_retransmissions_total{kind="video"}`,
		`podium_keyframe_requests_total{direction="from-receivers"}`, `podium_keyframe_requests_total{direction="to-publishers"}`,
		`podium_packets_dropped_total{kind="audio",reason="malformed"}`, `podium_packets_dropped_total{kind="video",reason="send-error"}`,
		`podium_receiver_estimate_bps_bucket{le="+Inf"}`, "podium_receiver_estimate_bps_sum", "podium_receiver_estimate_bps_count",
		"podium_layer_switches_total", "podium_probe_bytes_total", "podium_retransmissions_over_budget_total",
		"podium_joins_total", "podium_signaling_messages_total", `podium_signaling_errors_total{code="room-full"}`,
		// The runtime families of earlier versions, kept for dashboards.
		"go_goroutines", `go_gc_pause_seconds_bucket{le="+Inf"}`, "go_gc_pause_seconds_count", "go_gc_cycles_total",
		"go_heap_objects_bytes", "go_memory_total_bytes",
		// The standard Go and process collectors.
		`go_gc_duration_seconds{quantile="0.5"}`, "go_gc_duration_seconds_count", "go_threads", "go_memstats_heap_alloc_bytes",
		"process_cpu_seconds_total", "process_resident_memory_bytes", "process_open_fds", "process_start_time_seconds",
	} {
		if _, ok := got[name]; !ok {
			t.Errorf("%s missing", name)
		}
	}
	if got["podium_up"] != 1 || got["go_goroutines"] < 1 || got["process_resident_memory_bytes"] <= 0 {
		t.Errorf("podium_up %v, go_goroutines %v, process_resident_memory_bytes %v",
			got["podium_up"], got["go_goroutines"], got["process_resident_memory_bytes"])
	}
}

const metricsToken = "scrape-0123456789abcdef"

// get is a GET of url with an Authorization header (none if auth is "").
func get(t *testing.T, url, auth string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestMetricsToken: with metrics-token, /metrics answers only its bearer, the
// scheme's name in any case.
func TestMetricsToken(t *testing.T) {
	srv := startServerWith(t, Options{}, func(c *config.Config) { withKeys(c); c.MetricsToken = metricsToken })
	url := srv.URL() + "metrics"
	for _, tt := range []struct {
		auth   string
		status int
	}{
		{"", 401},
		{"Bearer wrong-0123456789abcdef", 401},
		{"Basic " + metricsToken, 401},
		{"Bearer " + metricsToken, 200},
		{"bearer " + metricsToken, 200},
	} {
		status, body := get(t, url, tt.auth)
		if status != tt.status || (status == 200) != strings.Contains(body, "podium_up 1\n") {
			t.Errorf("Authorization %q: %d, want %d\n%.200s", tt.auth, status, tt.status, body)
		}
	}
	if got := scrapeURL(t, url, metricsToken); got["podium_dev_mode"] != 0 {
		t.Errorf("podium_dev_mode %v with keys", got["podium_dev_mode"])
	}
}

// TestMetricsHTTP: with metrics-http, /metrics moves to its own listener (the
// token still applies there) and http no longer serves it.
func TestMetricsHTTP(t *testing.T) {
	srv := startServerWith(t, Options{}, func(c *config.Config) { c.MetricsHTTP = "127.0.0.1:0"; c.MetricsToken = metricsToken })
	if !strings.HasPrefix(srv.MetricsURL(), "http://127.0.0.1:") || strings.HasPrefix(srv.MetricsURL(), srv.URL()) {
		t.Fatalf("metrics at %s, server at %s", srv.MetricsURL(), srv.URL())
	}
	if status, _ := get(t, srv.MetricsURL(), ""); status != 401 {
		t.Errorf("metrics-http without the token: %d", status)
	}
	if got := scrapeURL(t, srv.MetricsURL(), metricsToken); got["podium_up"] != 1 {
		t.Errorf("metrics-http: podium_up %v", got["podium_up"])
	}
	if _, body := get(t, srv.URL()+"metrics", "Bearer "+metricsToken); strings.Contains(body, "podium_up") {
		t.Errorf("http still serves /metrics:\n%.200s", body)
	}
}

// TestMetricsOpenWarning: with keys, a /metrics open to anyone is worth a
// start-up warning; with a token or its own listener it is not.
func TestMetricsOpenWarning(t *testing.T) {
	for _, tt := range []struct {
		name   string
		change func(*config.Config)
		warn   bool
	}{
		{"dev mode", func(*config.Config) {}, false},
		{"keys", withKeys, true},
		{"keys and token", func(c *config.Config) { withKeys(c); c.MetricsToken = metricsToken }, false},
		{"keys and metrics-http", func(c *config.Config) { withKeys(c); c.MetricsHTTP = "127.0.0.1:0" }, false},
	} {
		cfg := config.Default()
		cfg.HTTP, cfg.UDPPort, cfg.TCPPort, cfg.MediaIPs = "127.0.0.1:0", 0, 0, []string{"127.0.0.1"}
		tt.change(&cfg)
		var logs strings.Builder
		srv, err := New(cfg, Options{}, slog.New(slog.NewTextHandler(&logs, nil)))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := srv.Serve(ctx); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(logs.String(), "/metrics is open"); got != tt.warn {
			t.Errorf("%s: warning %v, want %v\n%s", tt.name, got, tt.warn, logs.String())
		}
	}
}

// TestEstimateObserveDoesNotAllocate: sessions observe their receiver's estimate
// (every 2 s); client_golang's histogram does it without allocating or locking.
func TestEstimateObserveDoesNotAllocate(t *testing.T) {
	h := newEstimates()
	if n := testing.AllocsPerRun(100, func() { h.Observe(3e6) }); n != 0 {
		t.Errorf("Observe allocates %v", n)
	}
}
