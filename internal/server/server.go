// Package server wires the media engine, the rooms and the web layer into one
// running Podium server. cmd/podium and the integration tests both use it.
package server

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/podium-sfu/podium/internal/algo/overload"
	"github.com/podium-sfu/podium/internal/auth"
	"github.com/podium-sfu/podium/internal/broadcast"
	"github.com/podium-sfu/podium/internal/cluster"
	"github.com/podium-sfu/podium/internal/config"
	"github.com/podium-sfu/podium/internal/forward"
	"github.com/podium-sfu/podium/internal/limit"
	"github.com/podium-sfu/podium/internal/peer"
	"github.com/podium-sfu/podium/internal/room"
	"github.com/podium-sfu/podium/internal/session"
	"github.com/podium-sfu/podium/internal/turn"
	"github.com/podium-sfu/podium/internal/web"
)

// Server is one running Podium instance.
type Server struct {
	cfg      config.Config
	log      *slog.Logger
	engine   *peer.Engine
	hub      *room.Hub
	http     *http.Server
	ln       net.Listener
	sessions sync.WaitGroup
	// cancelSessions ends every session when the server stops.
	sessionCtx     context.Context
	cancelSessions context.CancelCauseFunc
	url            string
	nodeURL        string // what the cluster names this node by (nodeURL)

	counters  *session.Counters
	estimates prometheus.Histogram // per-receiver bandwidth estimates (bits/s)
	draining  atomic.Bool
	started   time.Time
	source    *clusterSource // what the node publishes in the cluster's registry (cluster.go)

	// node is this server's membership of the cluster (docs/cluster.md);
	// redirects counts joins sent to another bridge.
	node      *cluster.Node
	redirects atomic.Uint64
	// placed remembers where joins were sent until the directory shows it.
	placed placements
	// hostsSeen: other nodes' hosts and when last seen healthy (clusterHosts).
	hostsMu   sync.Mutex
	hostsSeen map[string]time.Time
	relay     relayParts // the relay between bridges (relay.go)
	// settings is the cluster's room settings (clustersettings.go; nil on a single node).
	settings *cluster.Settings

	// metricsHTTP serves /metrics on metrics-http (nil: /metrics is on http).
	metricsHTTP *http.Server
	metricsLn   net.Listener

	turn *turn.Server // the embedded TURN server (nil: off)

	broadcast *broadcast.Handler // WHIP and WHEP (docs/broadcast.md)

	overload *overloadParts // overload protection (overload.go); nil: off
}

// Options are knobs tests need beyond the configuration.
type Options struct {
	Client             fs.FS // the built web client
	NegotiationTimeout time.Duration
	// Meter, when set, counts what the server receives and forwards (benchmarks).
	Meter *forward.Meter
	// Now is the clock tokens are checked against (nil: time.Now).
	Now func() time.Time
	// HTTPReadTimeout and HTTPWriteTimeout bound one plain HTTP request (0:
	// 30 s and 60 s); WebSockets are exempt.
	HTTPReadTimeout, HTTPWriteTimeout time.Duration
	// NodeID names the node in the cluster (empty: random); ClusterHeartbeat
	// and ClusterTTL override the registry's 2 s and 6 s (tests).
	NodeID                       string
	ClusterHeartbeat, ClusterTTL time.Duration
	// CPU, when set, replaces the process's measured CPU fraction as the
	// overload protection's input and in the load the node publishes to the
	// cluster (tests: nodes in one process share its CPU); OverloadInterval (0: 1 s) and
	// OverloadTiming (nil: the defaults; thresholds still from the
	// configuration) speed it up.
	CPU              func(now time.Time) float64
	OverloadInterval time.Duration
	OverloadTiming   *overload.Config
}

// New opens the media and HTTP sockets; Serve starts answering.
func New(cfg config.Config, opts Options, log *slog.Logger) (*Server, error) {
	if opts.NegotiationTimeout == 0 {
		opts.NegotiationTimeout = 15 * time.Second
	}
	if opts.HTTPReadTimeout == 0 {
		opts.HTTPReadTimeout = 30 * time.Second
	}
	if opts.HTTPWriteTimeout == 0 {
		opts.HTTPWriteTimeout = 60 * time.Second
	}
	pc := peer.Config{
		UDPPort: cfg.UDPPort, TCPPort: cfg.TCPPort,
		PublicIPs: cfg.PublicIPs, BindIPs: cfg.MediaIPs, STUNServers: cfg.STUN,
	}
	if opts.Meter != nil {
		pc.Stamps = &opts.Meter.Stamps
	}
	engine, err := peer.NewEngine(pc)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.HTTP)
	if err != nil {
		engine.Close()
		return nil, fmt.Errorf("http %s: %w", cfg.HTTP, err)
	}
	ln = web.LimitConns(ln, cfg.MaxConnsPerIP) // TLS handshakes count too
	scheme := "http"
	if cfg.TLS() {
		tlsCfg, err := tlsConfig(cfg, ln.Addr())
		if err != nil {
			_ = ln.Close()
			engine.Close()
			return nil, err
		}
		ln = tls.NewListener(ln, tlsCfg)
		scheme = "https"
	}
	var verifier *auth.Verifier
	if keys := cfg.Keys(); len(keys) > 0 {
		if verifier, err = auth.NewVerifier(keys); err != nil {
			_ = ln.Close()
			engine.Close()
			return nil, fmt.Errorf("auth-keys: %w", err)
		}
	}
	resumeKey := make([]byte, 32)
	_, _ = rand.Read(resumeKey)
	limits := room.Limits{MaxRooms: cfg.MaxRooms, MaxParticipants: cfg.MaxParticipants, RoomsPerAddress: cfg.RoomsPerIP}
	s := &Server{cfg: cfg, log: log, engine: engine, ln: ln,
		hub:      room.NewHubWith(room.Settings{LastN: cfg.LastN, VideoPausing: cfg.VideoPausing, PauseGrace: room.NewSenderGrace, NoP2P: !cfg.P2P, AudioSlots: cfg.AudioSlots}, limits),
		url:      scheme + "://" + ln.Addr().String() + "/",
		counters: session.NewCounters(), estimates: newEstimates(), started: time.Now(), overload: newOverload(cfg, opts)}
	s.nodeURL = nodeURL(cfg, s.url)
	s.hub.SetLogger(log)
	if err := s.startCluster(opts); err != nil {
		_ = ln.Close()
		engine.Close()
		return nil, err
	}
	s.sessionCtx, s.cancelSessions = context.WithCancelCause(context.Background())
	deps := session.Deps{
		Engine: engine, Hub: s.hub, ResumeKey: resumeKey, Log: log,
		JoinTimeout: 10 * time.Second, NegotiationTimeout: opts.NegotiationTimeout, MediaTimeout: cfg.MediaTimeout,
		Meter: opts.Meter,
		Auth:  verifier, Dev: cfg.DevMode(), Now: opts.Now,
		Limits: limits, MaxMessageBytes: cfg.MaxMessageBytes, SignalingRate: cfg.SignalingRate, SignalingBurst: cfg.SignalingBurst,
		MaxTracks: cfg.MaxTracks, Joins: limit.PerMinute(cfg.JoinsPerIP), Counters: s.counters, Estimates: s.estimates,
	}
	if cfg.Clustered() {
		deps.ClientRTT = s.observeClientRTT
		deps.Place, deps.Fallbacks, deps.Inherit, deps.Settings, deps.Chat = s.place, s.fallbacks, s.inherit, s.changeSettings, s.publishChat
	}
	mainMetrics, err := s.setUpMetrics()
	if err != nil {
		s.closeCluster()
		_ = ln.Close()
		engine.Close()
		return nil, err
	}
	if s.turn, deps.TURN, err = startTURN(cfg, ln.Addr(), engine.UDPAddrs(), log); err != nil {
		s.closeCluster()
		_ = ln.Close()
		engine.Close()
		if s.metricsLn != nil {
			_ = s.metricsLn.Close()
		}
		return nil, err
	}
	admin := &web.Admin{Hub: s.hub, Auth: verifier, Dev: cfg.DevMode(), Now: opts.Now, Log: log, Node: s.node.ID()}
	if cfg.Clustered() {
		admin.Remote, admin.Cluster = s.remoteParticipants, clusterAdmin{s}
	}
	s.broadcast = &broadcast.Handler{Engine: engine, Hub: s.hub, Auth: verifier, Dev: cfg.DevMode(), Now: opts.Now, Log: log,
		ClientIP: func(r *http.Request) string { return web.ClientIP(r, cfg.TrustProxy) }, Joins: deps.Joins, Meter: opts.Meter}
	h := &web.Handler{Client: opts.Client, Log: log, TrustProxy: cfg.TrustProxy, Dev: cfg.DevMode(), HTTPHosts: httpHosts(cfg), Ready: s.ready, Metrics: mainMetrics, Admin: admin.Routes(),
		Broadcast: s.broadcast.Routes(),
		Serve: func(_ context.Context, conn *websocket.Conn, remote string, hints web.Hints) {
			s.sessions.Add(1)
			defer s.sessions.Done()
			// Sessions outlive the HTTP request's context: they end with the server.
			session.Serve(s.sessionCtx, conn, deps, remote, session.Hints{Region: hints.Region, Bridge: hints.Bridge, Lost: hints.Lost})
		}}
	if cfg.Clustered() {
		h.ClusterHosts = s.clusterHosts
	}
	s.http = &http.Server{Handler: h.Routes(), ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout: opts.HTTPReadTimeout, WriteTimeout: opts.HTTPWriteTimeout, IdleTimeout: cfg.HTTPIdleTimeout,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)}
	return s, nil
}

// httpHosts are the host names --http and --public-url give this server.
func httpHosts(cfg config.Config) []string {
	host, _, _ := net.SplitHostPort(cfg.HTTP)
	hosts := []string{host}
	if h := urlHost(cfg.PublicURL); h != "" {
		hosts = append(hosts, h)
	}
	return hosts
}

// URL is where the web client is served.
func (s *Server) URL() string { return s.url }

// MediaAddrs are the local addresses media is received on.
func (s *Server) MediaAddrs() []net.Addr { return s.engine.UDPAddrs() }

// Hub exposes the rooms (tests and, later, the admin API).
func (s *Server) Hub() *room.Hub { return s.hub }

// Serve answers HTTP until ctx ends, then closes every session and socket.
func (s *Server) Serve(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() { errc <- s.http.Serve(s.ln) }()
	stopMetrics := s.serveMetrics()
	stopOverload := s.runOverload()
	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.http.Shutdown(shutdownCtx)
	stopMetrics(shutdownCtx)
	stopOverload()
	s.cancelSessions(session.ErrShutdown)
	s.sessions.Wait()
	s.broadcast.Close()
	s.hub.Close()
	s.closeCluster()
	s.engine.Close()
	if s.turn != nil {
		_ = s.turn.Close()
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}
