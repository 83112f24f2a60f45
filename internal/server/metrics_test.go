package server

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/podium-sfu/podium/internal/metrics"
)

func scrape(t *testing.T, srv *Server) metrics.Samples {
	t.Helper()
	resp, err := http.Get(srv.URL() + "metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != metrics.ContentType {
		t.Fatalf("/metrics: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	s, err := metrics.Parse(string(b))
	if err != nil {
		t.Fatalf("/metrics is not a valid exposition: %v\n%s", err, b)
	}
	return s
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
