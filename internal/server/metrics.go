package server

import (
	"io"
	"maps"
	"slices"
	"time"

	"github.com/podium-sfu/podium/internal/metrics"
	"github.com/podium-sfu/podium/internal/room"
)

// estimateBounds are the buckets of podium_receiver_estimate_bps, in bits/s.
var estimateBounds = []float64{100e3, 250e3, 500e3, 1e6, 2e6, 4e6, 8e6, 16e6, 32e6}

// ReceiverEstimates is the histogram of per-receiver bandwidth estimates
// (podium_receiver_estimate_bps): bandwidth estimation observes each new estimate.
func (s *Server) ReceiverEstimates() *metrics.Hist { return s.estimates }

// writeMetrics is /metrics. Everything is read at scrape time from counters the
// tracks and sessions keep anyway (rooms → members → tracks), so metrics add no
// work to the packet path.
func (s *Server) writeMetrics(out io.Writer) error {
	rooms, totals := s.hub.Collect(time.Now())
	w := metrics.NewWriter(out)

	w.One("podium_up", metrics.Gauge, "1 while the server runs.", 1)
	w.One("podium_start_time_seconds", metrics.Gauge, "When the server started, in seconds since the Unix epoch.", float64(s.started.UnixNano())/1e9)
	w.One("podium_dev_mode", metrics.Gauge, "1 when rooms are open without tokens (dev mode).", b2f(s.cfg.DevMode()))
	w.One("podium_draining", metrics.Gauge, "1 while the server drains (SIGTERM): no new participants.", b2f(s.draining.Load()))

	participants := 0
	tracks := map[string]int{"audio": 0, "video": 0}
	forwarding := map[string]int{"audio": 0, "video": 0}
	for _, r := range rooms {
		participants += len(r.Participants)
		for k, n := range r.Tracks {
			tracks[k] += n
		}
		for k, n := range r.Forwarding {
			forwarding[k] += n
		}
	}
	w.One("podium_rooms", metrics.Gauge, "Rooms with at least one participant.", float64(len(rooms)))
	w.One("podium_participants", metrics.Gauge, "Participants in all rooms.", float64(participants))
	w.One("podium_signaling_connections", metrics.Gauge, "Open signaling WebSockets (joined or not).", float64(s.counters.Open.Load()))
	kinds := func(name, typ, help string, m map[string]int) {
		w.Family(name, typ, help)
		for _, k := range []string{"audio", "video"} {
			w.Sample(name, float64(m[k]), "kind", k)
		}
	}
	kinds("podium_tracks", metrics.Gauge, "Tracks received from publishers (each simulcast encoding counts).", tracks)
	kinds("podium_forwarded_streams", metrics.Gauge, "Streams being forwarded to receivers (video switched off by Last N excluded).", forwarding)

	perKind := func(name, help string, get func(*room.KindTotals) uint64) {
		w.Family(name, metrics.Counter, help)
		for k := range totals.Kinds {
			w.Sample(name, float64(get(&totals.Kinds[k])), "kind", room.KindName(k))
		}
	}
	perKind("podium_packets_received_total", "RTP packets received from publishers.", func(k *room.KindTotals) uint64 { return k.PacketsIn })
	perKind("podium_bytes_received_total", "RTP bytes (header and payload) received from publishers.", func(k *room.KindTotals) uint64 { return k.BytesIn })
	perKind("podium_packets_sent_total", "RTP packets forwarded to receivers.", func(k *room.KindTotals) uint64 { return k.PacketsOut })
	perKind("podium_bytes_sent_total", "RTP bytes (header and payload) forwarded to receivers.", func(k *room.KindTotals) uint64 { return k.BytesOut })
	perKind("podium_keyframes_received_total", "Keyframes received from publishers.", func(k *room.KindTotals) uint64 { return k.Keyframes })
	perKind("podium_nacks_received_total", "Sequence numbers receivers asked for again (NACK).", func(k *room.KindTotals) uint64 { return k.NACKs })
	perKind("podium_retransmissions_total", "Packets resent to receivers from the cache in answer to NACKs.", func(k *room.KindTotals) uint64 { return k.Retransmissions })

	var fromReceivers, toSenders uint64
	for k := range totals.Kinds {
		fromReceivers += totals.Kinds[k].KeyframeRequestsIn
		toSenders += totals.Kinds[k].KeyframeRequestsOut
	}
	w.Family("podium_keyframe_requests_total", metrics.Counter, "Keyframe requests (PLI/FIR): received from receivers, and sent to publishers (aggregated).")
	w.Sample("podium_keyframe_requests_total", float64(fromReceivers), "direction", "from-receivers")
	w.Sample("podium_keyframe_requests_total", float64(toSenders), "direction", "to-publishers")

	w.Family("podium_packets_dropped_total", metrics.Counter, "Packets not forwarded, by kind and reason.")
	for k := range totals.Kinds {
		for reason := range room.NumDropReasons {
			w.Sample("podium_packets_dropped_total", float64(totals.Kinds[k].Dropped[reason]), "kind", room.KindName(k), "reason", room.DropReason(reason))
		}
	}

	bw := totals.Bandwidth
	w.One("podium_layer_switches_total", metrics.Counter, "Changes of a playing video's allocated layer (or suspension) for a receiver's bandwidth or layout.", float64(bw.LayerSwitches))
	w.One("podium_probe_bytes_total", metrics.Counter, "Padding bytes sent to receivers to probe for bandwidth.", float64(bw.ProbeBytes))
	w.One("podium_retransmissions_over_budget_total", metrics.Counter, "NACK answers not sent: over the receiver's retransmission budget (20 % of its estimate).", float64(bw.RetransmitsDropped))

	w.Family("podium_receiver_estimate_bps", metrics.Histogram, "Bandwidth estimates of receivers' downlinks, in bits per second.")
	w.Histogram("podium_receiver_estimate_bps", s.estimates.Snapshot())

	w.One("podium_joins_total", metrics.Counter, "Participants admitted to a room.", float64(s.counters.Joined.Load()))
	w.One("podium_signaling_messages_total", metrics.Counter, "Signaling messages received from clients.", float64(s.counters.Messages.Load()))
	w.Family("podium_signaling_errors_total", metrics.Counter, "Error messages sent to clients, by code (refused joins and limits included).")
	errs := s.counters.Errors()
	for _, code := range sortedKeys(errs) {
		w.Sample("podium_signaling_errors_total", float64(errs[code]), "code", code)
	}

	metrics.WriteRuntime(w)
	return w.Flush()
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func sortedKeys(m map[string]uint64) []string { return slices.Sorted(maps.Keys(m)) }
