package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/podium-sfu/podium/internal/metrics"
	"github.com/podium-sfu/podium/internal/room"
)

// estimateBounds are the buckets of podium_receiver_estimate_bps, in bits/s.
var estimateBounds = []float64{100e3, 250e3, 500e3, 1e6, 2e6, 4e6, 8e6, 16e6, 32e6}

// newEstimates is the histogram of per-receiver bandwidth estimates: each
// session observes its receiver's estimate every RTT sample (2 s), not per packet.
func newEstimates() prometheus.Histogram {
	return prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "podium_receiver_estimate_bps",
		Help:    "Bandwidth estimates of receivers' downlinks, in bits per second.",
		Buckets: estimateBounds,
	})
}

// setUpMetrics builds /metrics: a private registry with the server's
// collector, the estimate histogram and the standard Go and process collectors.
// With metrics-http it opens that listener for /metrics alone (plain HTTP, for
// a private network) and returns nil for http; otherwise the handler for http.
func (s *Server) setUpMetrics() (http.Handler, error) {
	reg, err := metrics.NewRegistry(collector{s}, s.estimates, clusterCollector{s}, relayCollector{s}, overloadCollector{s})
	if err != nil {
		return nil, err
	}
	h := metrics.Handler(reg, s.cfg.MetricsToken, s.log)
	if s.cfg.MetricsHTTP == "" {
		if s.cfg.MetricsToken == "" && !s.cfg.DevMode() {
			s.log.Warn("/metrics is open to anyone who reaches http; set metrics-token or metrics-http to protect it", "http", s.cfg.HTTP)
		}
		return h, nil
	}
	ln, err := net.Listen("tcp", s.cfg.MetricsHTTP)
	if err != nil {
		return nil, fmt.Errorf("metrics-http %s: %w", s.cfg.MetricsHTTP, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h)
	s.metricsLn = ln
	s.metricsHTTP = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: time.Minute,
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelDebug)}
	return nil, nil
}

// serveMetrics answers on metrics-http, if set, until the returned stop is called.
func (s *Server) serveMetrics() (stop func(context.Context)) {
	if s.metricsHTTP == nil {
		return func(context.Context) {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := s.metricsHTTP.Serve(s.metricsLn); !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("metrics-http", "err", err)
		}
	}()
	return func(ctx context.Context) {
		_ = s.metricsHTTP.Shutdown(ctx)
		<-done
	}
}

// MetricsURL is where /metrics is served: on metrics-http when set.
func (s *Server) MetricsURL() string {
	if s.metricsLn != nil {
		return "http://" + s.metricsLn.Addr().String() + "/metrics"
	}
	return s.url + "metrics"
}

// collector reads the server's families at scrape time from counters the
// tracks and sessions keep anyway (rooms → members → tracks), so metrics add no
// work to the packet path.
type collector struct{ s *Server }

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

var (
	upDesc            = desc("podium_up", "1 while the server runs.")
	startDesc         = desc("podium_start_time_seconds", "When the server started, in seconds since the Unix epoch.")
	devModeDesc       = desc("podium_dev_mode", "1 when rooms are open without tokens (dev mode).")
	drainingDesc      = desc("podium_draining", "1 while the server drains (SIGTERM): no new participants.")
	roomsDesc         = desc("podium_rooms", "Rooms with at least one participant.")
	participantsDesc  = desc("podium_participants", "Participants in all rooms.")
	connectionsDesc   = desc("podium_signaling_connections", "Open signaling WebSockets (joined or not).")
	tracksDesc        = desc("podium_tracks", "Tracks received from publishers (each simulcast encoding counts).", "kind")
	forwardedDesc     = desc("podium_forwarded_streams", "Streams being forwarded to receivers (video switched off by Last N excluded).", "kind")
	packetsInDesc     = desc("podium_packets_received_total", "RTP packets received from publishers.", "kind")
	bytesInDesc       = desc("podium_bytes_received_total", "RTP bytes (header and payload) received from publishers.", "kind")
	packetsOutDesc    = desc("podium_packets_sent_total", "RTP packets forwarded to receivers.", "kind")
	bytesOutDesc      = desc("podium_bytes_sent_total", "RTP bytes (header and payload) forwarded to receivers.", "kind")
	keyframesDesc     = desc("podium_keyframes_received_total", "Keyframes received from publishers.", "kind")
	nacksDesc         = desc("podium_nacks_received_total", "Sequence numbers receivers asked for again (NACK).", "kind")
	retransmitsDesc   = desc("podium_retransmissions_total", "Packets resent to receivers from the cache in answer to NACKs.", "kind")
	keyframeReqsDesc  = desc("podium_keyframe_requests_total", "Keyframe requests (PLI/FIR): received from receivers, and sent to publishers (aggregated).", "direction")
	droppedDesc       = desc("podium_packets_dropped_total", "Packets not forwarded, by kind and reason.", "kind", "reason")
	layerSwitchesDesc = desc("podium_layer_switches_total", "Changes of a playing video's allocated layer (or suspension) for a receiver's bandwidth or layout.")
	probeBytesDesc    = desc("podium_probe_bytes_total", "Padding bytes sent to receivers to probe for bandwidth.")
	overBudgetDesc    = desc("podium_retransmissions_over_budget_total", "NACK answers not sent: over the receiver's retransmission budget (20 % of its estimate).")
	joinsDesc         = desc("podium_joins_total", "Participants admitted to a room.")
	messagesDesc      = desc("podium_signaling_messages_total", "Signaling messages received from clients.")
	peerConnsDesc     = desc("podium_peer_connections_total", "Peer connections made for participants, by pc (publish, subscribe): an audience member makes no publish one.", "pc")
	iceLapsesDesc     = desc("podium_peer_connection_lapses_total", "Participants' peer connections pion declared disconnected (nothing heard of the peer for 8 s; failed 25 s later).")
	consentDesc       = desc("podium_ice_consent_checks_total", "ICE consent checks on the data plane's pairs, by what (answered: the peers' checks answered at the socket; sent: ours; confirmed: ours the peers answered).", "what")
	errorsDesc        = desc("podium_signaling_errors_total", "Error messages sent to clients, by code (refused joins and limits included).", "code")
	p2pRoomsDesc      = desc("podium_p2p_rooms", "Rooms in P2P mode: their two participants were told to connect directly.")
	p2pDirectDesc     = desc("podium_p2p_participants", "Participants receiving their peer over the direct connection (the SFU forwards them nothing).")
	p2pSwitchesDesc   = desc("podium_p2p_switches_total", "Switches of a room's media path, to P2P mode or back to the SFU.", "to")
	p2pFailuresDesc   = desc("podium_p2p_failures_total", "Direct connections whose client reported them failed (the room stays on the SFU).")
)

var allDescs = []*prometheus.Desc{upDesc, startDesc, devModeDesc, drainingDesc, roomsDesc, participantsDesc, connectionsDesc,
	tracksDesc, forwardedDesc, packetsInDesc, bytesInDesc, packetsOutDesc, bytesOutDesc, keyframesDesc, nacksDesc, retransmitsDesc,
	keyframeReqsDesc, droppedDesc, layerSwitchesDesc, probeBytesDesc, overBudgetDesc, joinsDesc, messagesDesc, peerConnsDesc, errorsDesc,
	iceLapsesDesc, consentDesc, p2pRoomsDesc, p2pDirectDesc, p2pSwitchesDesc, p2pFailuresDesc}

func (collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range append(allDescs, turnDescs...) {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	s := c.s
	rooms, totals := s.hub.Collect(time.Now())
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}

	gauge(upDesc, 1)
	gauge(startDesc, float64(s.started.UnixNano())/1e9)
	gauge(devModeDesc, b2f(s.cfg.DevMode()))
	gauge(drainingDesc, b2f(s.draining.Load()))

	participants, p2pRooms, p2pDirect := 0, 0, 0
	tracks := map[string]int{"audio": 0, "video": 0}
	forwarding := map[string]int{"audio": 0, "video": 0}
	for _, r := range rooms {
		participants += len(r.Participants)
		if r.P2PMode {
			p2pRooms++
		}
		p2pDirect += r.P2PDirect
		for k, n := range r.Tracks {
			tracks[k] += n
		}
		for k, n := range r.Forwarding {
			forwarding[k] += n
		}
	}
	gauge(roomsDesc, float64(len(rooms)))
	gauge(participantsDesc, float64(participants))
	gauge(connectionsDesc, float64(s.counters.Open.Load()))
	for _, k := range []string{"audio", "video"} {
		gauge(tracksDesc, float64(tracks[k]), k)
		gauge(forwardedDesc, float64(forwarding[k]), k)
	}

	var fromReceivers, toSenders uint64
	for i := range totals.Kinds {
		k, kind := &totals.Kinds[i], room.KindName(i)
		counter(packetsInDesc, k.PacketsIn, kind)
		counter(bytesInDesc, k.BytesIn, kind)
		counter(packetsOutDesc, k.PacketsOut, kind)
		counter(bytesOutDesc, k.BytesOut, kind)
		counter(keyframesDesc, k.Keyframes, kind)
		counter(nacksDesc, k.NACKs, kind)
		counter(retransmitsDesc, k.Retransmissions, kind)
		for reason := range room.NumDropReasons {
			counter(droppedDesc, k.Dropped[reason], kind, room.DropReason(reason))
		}
		fromReceivers += k.KeyframeRequestsIn
		toSenders += k.KeyframeRequestsOut
	}
	counter(keyframeReqsDesc, fromReceivers, "from-receivers")
	counter(keyframeReqsDesc, toSenders, "to-publishers")

	bw := totals.Bandwidth
	counter(layerSwitchesDesc, bw.LayerSwitches)
	counter(probeBytesDesc, bw.ProbeBytes)
	counter(overBudgetDesc, bw.RetransmitsDropped)
	gauge(p2pRoomsDesc, float64(p2pRooms))
	gauge(p2pDirectDesc, float64(p2pDirect))
	counter(p2pSwitchesDesc, totals.P2P.ToP2P, "p2p")
	counter(p2pSwitchesDesc, totals.P2P.ToSFU, "sfu")
	counter(p2pFailuresDesc, totals.P2P.Failures)

	counter(joinsDesc, s.counters.Joined.Load())
	counter(messagesDesc, s.counters.Messages.Load())
	publishPCs, subscribePCs := s.engine.PeerConnectionsMade()
	counter(peerConnsDesc, publishPCs, "publish")
	counter(peerConnsDesc, subscribePCs, "subscribe")
	counter(iceLapsesDesc, s.counters.Lapses.Load())
	answered, sent, confirmed := s.engine.ConsentChecks()
	counter(consentDesc, answered, "answered")
	counter(consentDesc, sent, "sent")
	counter(consentDesc, confirmed, "confirmed")
	errs := s.counters.Errors()
	for code, n := range errs { // the registry sorts them
		counter(errorsDesc, n, code)
	}
	s.collectTURN(ch)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// ICEConsent is what the data plane did for ICE consent (the peers' checks
// answered at the sockets, ours sent, ours answered) and how many
// participants' peer connections lapsed (ICE disconnected): tests read them.
func (s *Server) ICEConsent() (answered, sent, confirmed, lapses uint64) {
	answered, sent, confirmed = s.engine.ConsentChecks()
	return answered, sent, confirmed, s.counters.Lapses.Load()
}
