// Package peer is the only package that configures pion: codecs, header extensions,
// interceptors, and the single UDP (and TCP) port all peer connections share.
package peer

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/ice/v4"
	"github.com/pion/interceptor"
	"github.com/pion/interceptor/pkg/nack"
	"github.com/pion/interceptor/pkg/report"
	"github.com/pion/logging"
	"github.com/pion/sdp/v3"
	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/forward"
	"github.com/podium-sfu/podium/internal/latency"
)

// Config is what the media transport needs from the server's configuration.
type Config struct {
	// UDPPort is the one UDP port for all media (0 picks a free port, for tests).
	UDPPort int
	// TCPPort enables ICE-TCP on that port when > 0.
	TCPPort int
	// PublicIPs are announced instead of the local addresses (servers behind 1:1 NAT).
	PublicIPs []string
	// BindIPs restricts media to these local addresses; empty means every interface.
	BindIPs []string
	// STUNServers are handed to clients and used by the server to learn its public address.
	STUNServers []string
	// Stamps, when set, records when sampled RTP packets are read from the UDP
	// socket (benchmarks measure the SFU's latency from there).
	Stamps *latency.Stamps
}

// Engine owns the shared sockets and the two pion APIs.
type Engine struct {
	cfg       Config
	udpMux    *ice.MultiUDPMuxDefault
	tcpMux    *ice.TCPMuxDefault
	tcpLn     net.Listener
	publish   *webrtc.API
	subscribe *webrtc.API
	arrivals  *arrivals            // transport-wide feedback of the publish connections
	twcc      *twccFeedbackFactory // its interceptors, until Publish routes them
	guard     *guard               // drops forged plaintext DTLS records
	net       *observingNet
	ingress   *ingress // connections whose SRTCP the sockets' readers take
	pionOnly  bool     // RTP and RTCP stay on pion's SRTP sessions (PionDataPlaneEnv)
	sendOnly  bool     // received RTCP stays on pion's (PionDataPlaneEnv)
	// feedbackOnly: of the received RTCP only transport-wide feedback is
	// taken at the socket (PionDataPlaneEnv rtp).
	feedbackOnly bool
	// ownsReceive: the publishers' RTP is taken at the socket (PionDataPlaneEnv
	// rtp or all); pion's NACK generator and receiver reports are not registered.
	ownsReceive bool
	// consentAtSocket: the sockets' readers keep the ICE consent of the
	// connections they follow (consent.go) and pion sends no keepalive
	// pings on them (modes rtp and all, where every session connection is
	// followed).
	consentAtSocket bool
	consent         consentCounts
	consentDone     chan struct{} // stops the consent loop
	closeOnce       sync.Once
	// publishPion and subscribePion are the APIs of connections the data
	// plane does not follow (WHIP and WHEP): pion keeps their consent.
	publishPion, subscribePion *webrtc.API
	// Peer connections made, by kind (an audience member's join makes no
	// publish one).
	publishPCs, subscribePCs atomic.Uint64
}

// disconnectedTimeout is how long pion waits, hearing nothing of a peer,
// before it declares the connection disconnected (when the data plane keeps
// consent; see NewEngine). A variable for tests.
var disconnectedTimeout = 8 * time.Second

// NewEngine opens the media sockets. Close releases them.
func NewEngine(cfg Config) (*Engine, error) {
	e := &Engine{cfg: cfg, pionOnly: pionOnlyFromEnv(), sendOnly: sendOnlyFromEnv(),
		feedbackOnly: feedbackOnlyFromEnv(), ownsReceive: ownsReceiveFromEnv()}
	e.consentAtSocket = e.ownsReceive
	keepIP := ipFilter(cfg.BindIPs)
	opts := []ice.UDPMuxFromPortOption{
		ice.UDPMuxFromPortWithLoopback(),
		ice.UDPMuxFromPortWithIPFilter(keepIP),
		ice.UDPMuxFromPortWithNetworks(ice.NetworkTypeUDP4),
		ice.UDPMuxFromPortWithReadBufferSize(4 << 20),
		ice.UDPMuxFromPortWithWriteBufferSize(4 << 20),
	}
	e.arrivals = newArrivals()
	e.twcc = &twccFeedbackFactory{arrivals: e.arrivals}
	e.guard = &guard{}
	e.ingress = newIngress(e.arrivals)
	n, err := newObservingNet(e.arrivals, cfg.Stamps, e.guard, e.ingress)
	if err != nil {
		return nil, err
	}
	e.net = n
	opts = append(opts, ice.UDPMuxFromPortWithNet(n))
	mux, err := ice.NewMultiUDPMuxFromPort(cfg.UDPPort, opts...)
	if err != nil {
		return nil, fmt.Errorf("media UDP port %d: %w", cfg.UDPPort, err)
	}
	e.udpMux = mux
	if cfg.TCPPort > 0 {
		ln, err := net.Listen("tcp4", net.JoinHostPort(tcpBindHost(cfg.BindIPs), strconv.Itoa(cfg.TCPPort)))
		if err != nil {
			_ = mux.Close()
			return nil, fmt.Errorf("media TCP port %d: %w", cfg.TCPPort, err)
		}
		e.tcpLn = ln
		e.tcpMux = ice.NewTCPMuxDefault(ice.TCPMuxParams{Listener: ln, ReadBufferSize: 64, Logger: logging.NewDefaultLoggerFactory().NewLogger("ice-tcp")})
	}
	pionSettings := e.settings(keepIP)
	settings := pionSettings
	if e.consentAtSocket {
		// No keepalive pings: the data plane checks consent (consent.go).
		// Pion still judges liveness, from what the data plane tells it or,
		// on a pair the data plane does not follow (ICE-TCP), from the
		// peer's own checks alone: every 2.5 s from Chromium, 4 to 6 s from
		// Firefox (RFC 7675), so disconnected after 8 s rather than pion's 5.
		settings.SetICETimeouts(disconnectedTimeout, 25*time.Second, 0)
	}
	apis := []struct {
		api      **webrtc.API
		settings webrtc.SettingEngine
		publish  bool
	}{
		{&e.publish, settings, true}, {&e.subscribe, settings, false},
		{&e.publishPion, pionSettings, true}, {&e.subscribePion, pionSettings, false},
	}
	for _, a := range apis {
		configure := subscribeInterceptors
		if a.publish {
			configure = publishInterceptors(e.twcc, !e.ownsReceive)
		}
		if *a.api, err = newAPI(a.settings, configure); err != nil {
			e.Close()
			return nil, err
		}
	}
	if e.consentAtSocket {
		e.consentDone = make(chan struct{})
		go e.ingress.consentLoop(e.consentDone)
	}
	return e, nil
}

func (e *Engine) settings(keepIP func(net.IP) bool) webrtc.SettingEngine {
	var s webrtc.SettingEngine
	s.SetICEUDPMux(e.udpMux)
	networks := []webrtc.NetworkType{webrtc.NetworkTypeUDP4}
	if e.tcpMux != nil {
		s.SetICETCPMux(e.tcpMux)
		networks = append(networks, webrtc.NetworkTypeTCP4)
	}
	s.SetNetworkTypes(networks)
	s.SetIncludeLoopbackCandidate(true)
	s.SetIPFilter(keepIP)
	s.SetICEMulticastDNSMode(ice.MulticastDNSModeDisabled)
	// A connection whose DTLS ends (the peer's close_notify or fatal alert; forged
	// plaintext ones never reach pion, see guard) is closed by pion, so its state
	// says closed and the session restarts it instead of waiting for ICE to fail.
	if len(e.cfg.PublicIPs) > 0 {
		s.SetNAT1To1IPs(e.cfg.PublicIPs, webrtc.ICECandidateTypeHost)
	}
	// The SFU is never behind a symmetric NAT of its own; a short gather keeps joins fast.
	s.SetSTUNGatherTimeout(2e9)
	return s
}

// UDPAddrs lists the local addresses media is received on.
func (e *Engine) UDPAddrs() []net.Addr { return e.udpMux.GetListenAddresses() }

// ICEServers are the STUN servers clients should use.
func (e *Engine) ICEServers() []webrtc.ICEServer {
	if len(e.cfg.STUNServers) == 0 {
		return nil
	}
	return []webrtc.ICEServer{{URLs: e.cfg.STUNServers}}
}

// NewPublishPC makes a connection on which a client sends its media to us.
// Call Publish on it (in modes rtp and all the data plane keeps its ICE
// consent; see consent.go).
func (e *Engine) NewPublishPC() (*webrtc.PeerConnection, error) {
	return e.newPC(e.publish, &e.publishPCs)
}

// NewSubscribePC makes a connection on which we send forwarded media to a
// client. Call Route on it (as NewPublishPC).
func (e *Engine) NewSubscribePC() (*webrtc.PeerConnection, error) {
	return e.newPC(e.subscribe, &e.subscribePCs)
}

// NewPionPublishPC and NewPionSubscribePC make connections the data plane
// does not follow (Route, Publish are not called on them: WHIP and WHEP), so
// pion keeps their ICE consent with its keepalive pings.
func (e *Engine) NewPionPublishPC() (*webrtc.PeerConnection, error) {
	return e.newPC(e.publishPion, &e.publishPCs)
}

// NewPionSubscribePC: see NewPionPublishPC.
func (e *Engine) NewPionSubscribePC() (*webrtc.PeerConnection, error) {
	return e.newPC(e.subscribePion, &e.subscribePCs)
}

// newPC makes a connection with api, counted in made.
func (e *Engine) newPC(api *webrtc.API, made *atomic.Uint64) (*webrtc.PeerConnection, error) {
	made.Add(1)
	return api.NewPeerConnection(webrtc.Configuration{ICEServers: e.ICEServers()})
}

// PeerConnectionsMade counts the publish and subscribe connections made so far.
func (e *Engine) PeerConnectionsMade() (publish, subscribe uint64) {
	return e.publishPCs.Load(), e.subscribePCs.Load()
}

// ForgedRecordsDropped counts the UDP datagrams dropped for carrying a
// plaintext DTLS record that is not part of a handshake (see guard).
func (e *Engine) ForgedRecordsDropped() uint64 { return e.guard.dropped.Load() }

// RTCPTaken counts the SRTCP datagrams the data plane took at the sockets
// (authenticated and handled) and those it refused (authentication or replay).
func (e *Engine) RTCPTaken() (taken, rejected uint64) {
	return e.ingress.taken.Load(), e.ingress.rejected.Load()
}

// ConsentChecks counts, over all connections, the peers' ICE checks the
// data plane answered at the sockets, its own consent checks sent, and
// those the peers answered (consent.go).
func (e *Engine) ConsentChecks() (answered, sent, confirmed uint64) {
	return e.consent.answered.Load(), e.consent.sent.Load(), e.consent.confirmed.Load()
}

// Close releases the media sockets.
func (e *Engine) Close() {
	e.closeOnce.Do(func() {
		if e.consentDone != nil {
			close(e.consentDone)
		}
	})
	if e.tcpMux != nil {
		_ = e.tcpMux.Close()
	}
	if e.udpMux != nil {
		_ = e.udpMux.Close()
	}
}

func ipFilter(bind []string) func(net.IP) bool {
	if len(bind) == 0 {
		return func(ip net.IP) bool { return ip.To4() != nil }
	}
	allowed := make([]net.IP, 0, len(bind))
	for _, s := range bind {
		if ip := net.ParseIP(s); ip != nil {
			allowed = append(allowed, ip)
		}
	}
	return func(ip net.IP) bool {
		for _, a := range allowed {
			if a.Equal(ip) {
				return true
			}
		}
		return false
	}
}

func tcpBindHost(bind []string) string {
	if len(bind) == 1 {
		return bind[0]
	}
	return ""
}

type interceptorSet func(*webrtc.MediaEngine, *interceptor.Registry) error

// publishInterceptors: on media we receive, the SFU terminates RTCP itself — it sends
// receiver reports, NACKs its own losses to the sender, and returns transport-wide
// congestion feedback, with arrival times taken at the socket (arrivals), so the
// browser's congestion control sees the uplink rather than our scheduling. Without
// reports (mode all) the receiver reports and NACKs are forward.UpTrack's, which
// sees every packet, whichever path (socket or pion) it came by.
func publishInterceptors(f *twccFeedbackFactory, reports bool) interceptorSet {
	return func(m *webrtc.MediaEngine, r *interceptor.Registry) error {
		if !reports {
			return registerTWCC(m, r, f)
		}
		gen, err := nack.NewGeneratorInterceptor(nack.GeneratorSize(1024), nack.GeneratorInterval(20e6))
		if err != nil {
			return err
		}
		r.Add(gen)
		rr, err := report.NewReceiverInterceptor()
		if err != nil {
			return err
		}
		r.Add(rr)
		return registerTWCC(m, r, f)
	}
}

func registerTWCC(m *webrtc.MediaEngine, r *interceptor.Registry, f *twccFeedbackFactory) error {
	for _, kind := range []webrtc.RTPCodecType{webrtc.RTPCodecTypeAudio, webrtc.RTPCodecTypeVideo} {
		if err := m.RegisterHeaderExtension(webrtc.RTPHeaderExtensionCapability{URI: sdp.TransportCCURI}, kind); err != nil {
			return err
		}
	}
	r.Add(f)
	return nil
}

// subscribeInterceptors: none. On media we send, sender reports are the senders'
// own, translated by forward.DownTrack (pion's would describe the SFU's clock, not
// the capture timeline lip sync needs), NACKs are answered from the DownTrack's
// cache, and forward.Link stamps the transport-wide sequence numbers whose
// feedback drives its bandwidth estimator; only the extensions are negotiated
// here: that one, and playout-delay on video, which forward.Link asks of a
// receiver whose repairs take a long round trip (algo/playout).
func subscribeInterceptors(m *webrtc.MediaEngine, _ *interceptor.Registry) error {
	for _, kind := range []webrtc.RTPCodecType{webrtc.RTPCodecTypeAudio, webrtc.RTPCodecTypeVideo} {
		if err := m.RegisterHeaderExtension(webrtc.RTPHeaderExtensionCapability{URI: forward.TransportCCURI}, kind); err != nil {
			return err
		}
	}
	return m.RegisterHeaderExtension(webrtc.RTPHeaderExtensionCapability{URI: forward.PlayoutDelayURI}, webrtc.RTPCodecTypeVideo)
}

func newAPI(settings webrtc.SettingEngine, configure interceptorSet) (*webrtc.API, error) {
	m := &webrtc.MediaEngine{}
	if err := registerCodecs(m); err != nil {
		return nil, err
	}
	r := &interceptor.Registry{}
	if err := configure(m, r); err != nil {
		return nil, fmt.Errorf("interceptors: %w", err)
	}
	return webrtc.NewAPI(webrtc.WithMediaEngine(m), webrtc.WithInterceptorRegistry(r), webrtc.WithSettingEngine(settings)), nil
}

var errNoCodec = errors.New("codec registration failed")
