// Package config is the server's configuration: one struct whose every field is a
// YAML key, a command-line flag and a PODIUM_* environment variable.
package config

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
)

// Config is everything `podium serve` can be told. The `key` tag names the YAML key
// and flag; the environment variable is PODIUM_ + key upper-cased with - as _.
type Config struct {
	HTTP          string   `key:"http" help:"address:port for the web client and signaling"`
	UDPPort       int      `key:"udp-port" help:"the one UDP port for all media"`
	TCPPort       int      `key:"tcp-port" help:"ICE-TCP fallback port (0 disables)"`
	PublicIPs     []string `key:"public-ip" help:"IP addresses to announce for media (servers behind 1:1 NAT), comma-separated; PUBLIC/LOCAL announces PUBLIC for one local address"`
	MediaIPs      []string `key:"media-ip" help:"local IP addresses to use for media, comma-separated (default: all)"`
	STUN          []string `key:"stun" help:"STUN server URLs handed to clients, comma-separated"`
	TLSCert       string   `key:"tls-cert" help:"TLS certificate file (PEM); serves HTTPS"`
	TLSKey        string   `key:"tls-key" help:"TLS private key file (PEM)"`
	TLSSelfSigned bool     `key:"tls-self-signed" help:"serve HTTPS with a generated self-signed certificate"`
	// Access control (README "Access control").
	Dev          bool     `key:"dev" help:"development mode: rooms open to anyone without a token (the default on a loopback address without auth-keys)"`
	AuthKeys     []string `key:"auth-keys" secret:"true" help:"token signing keys as id:secret (secret at least 32 bytes), comma-separated; joining then needs a token (podium token)"`
	MetricsToken string   `key:"metrics-token" secret:"true" help:"when set, /metrics answers only requests with Authorization: Bearer <this token>"`
	MetricsHTTP  string   `key:"metrics-http" help:"address:port to serve /metrics on instead of http (plain HTTP, for a private network)"`
	LastN        int      `key:"last-n" help:"default number of videos each participant receives (-1: unlimited)"`
	VideoPausing bool     `key:"video-pausing" help:"tell senders whose video nobody receives to stop sending it"`
	P2P          bool     `key:"p2p" help:"let the two participants of a two-person room connect directly (rooms can turn it off)"`
	AudioSlots   int      `key:"audio-slots" help:"speakers whose audio each receiver gets, on that many fixed tracks (0: every microphone on a track of its own)"`
	// Limits; 0 means unlimited where the help says so.
	MaxRooms        int           `key:"max-rooms" help:"rooms per server (0: unlimited)"`
	MaxParticipants int           `key:"max-participants" help:"participants per room (0: unlimited)"`
	MaxTracks       int           `key:"max-tracks" help:"audio and video tracks one participant may publish (0: unlimited)"`
	JoinsPerIP      int           `key:"joins-per-ip" help:"joins per client IP address (IPv6: per /64) per minute (0: unlimited)"`
	RoomsPerIP      int           `key:"rooms-per-ip" help:"live rooms one client IP address (IPv6: per /64) may have opened (0: unlimited)"`
	MediaTimeout    time.Duration `key:"media-timeout" help:"remove a joined participant with no peer connection connecting or connected that sent no signaling message for this long (e.g. 30s)"`
	MaxConnsPerIP   int           `key:"max-conns-per-ip" help:"open TCP connections to the HTTP port per peer IP address (IPv6: per /64) (0: unlimited)"`
	HTTPIdleTimeout time.Duration `key:"http-idle-timeout" help:"close an idle HTTP keep-alive connection after this long (e.g. 60s)"`
	SignalingRate   int           `key:"signaling-rate" help:"signaling messages per second per connection, sustained (0: unlimited)"`
	SignalingBurst  int           `key:"signaling-burst" help:"signaling messages a connection may send in a burst above signaling-rate"`
	MaxMessageBytes int           `key:"max-message-bytes" help:"largest signaling message accepted, in bytes"`
	TrustProxy      bool          `key:"trust-proxy" help:"take client addresses from X-Forwarded-For (only behind a reverse proxy that sets it)"`
	DrainTimeout    time.Duration `key:"drain-timeout" help:"on SIGTERM, how long rooms may carry on before they are closed (e.g. 30s)"`
	// Overload protection (docs/scale.md "Overload").
	Overload     bool    `key:"overload" help:"shed video when the server's CPU is overused, and refuse joins once every room is audio only"`
	OverloadCPU  float64 `key:"overload-cpu" help:"CPU use (fraction of the usable cores, smoothed) above which video is shed"`
	UnderloadCPU float64 `key:"underload-cpu" help:"CPU use below which shed video is restored, a step every 10 s"`
	// Cluster (docs/cluster.md).
	PublicURL      string   `key:"public-url" help:"the URL browsers reach this node at, such as https://eu1.example.com/; cluster redirects and fallbacks name it (default: http's address, a wildcard host replaced by the first public-ip, else by this machine's outgoing address)"`
	Region         string   `key:"region" help:"this node's region; participants who reach it are placed in this region unless they say otherwise"`
	ClusterListen  string   `key:"cluster-listen" help:"host:port of this node's NATS cluster (route) listener; unset: a single node"`
	ClusterPeers   []string `key:"cluster-peers" help:"route URLs of the other nodes, nats://host:port, comma-separated"`
	ClusterTLSCert string   `key:"cluster-tls-cert" help:"certificate (PEM) for the cluster routes (mutual TLS, NATS cluster tls)"`
	ClusterTLSKey  string   `key:"cluster-tls-key" help:"private key (PEM) for cluster-tls-cert"`
	ClusterTLSCA   string   `key:"cluster-tls-ca" help:"CA (PEM) that signs every node's cluster certificate"`
	NATS           string   `key:"nats" secret:"url" help:"URL of an external NATS (with JetStream) to use instead of the embedded server, e.g. nats://10.0.0.2:4222"`
	NATSCreds      string   `key:"nats-creds" help:"NATS credentials file for nats"`
	RelayPort      int      `key:"relay-port" help:"UDP port reserved for bridge-to-bridge media (the relay; 0: none)"`
	LogLevel       string   `key:"log-level" help:"debug, info, warn or error"`
	LogJSON        bool     `key:"log-json" help:"log as JSON lines"`
	// TURN (docs/deployment.md, "Turning it on"): the embedded server runs when one of
	// its ports is set; ice-server names external ones instead or as well.
	TURNUDPPort        int           `key:"turn-udp-port" help:"embedded TURN server's UDP port, e.g. 3478 (0: off)"`
	TURNTCPPort        int           `key:"turn-tcp-port" help:"embedded TURN server's TCP port, e.g. 3478 (0: off)"`
	TURNTLSPort        int           `key:"turn-tls-port" help:"embedded TURN server's TLS port, e.g. 5349; needs tls-cert and tls-key (0: off)"`
	TURNHost           string        `key:"turn-host" help:"host name or IP clients reach the embedded TURN server at (default: turn-public-ip); the name of tls-cert for turns:"`
	TURNPublicIP       string        `key:"turn-public-ip" help:"IP address announced for relays (default: the first public-ip, else http's address)"`
	TURNRealm          string        `key:"turn-realm" help:"TURN realm"`
	TURNSecret         string        `key:"turn-secret" secret:"true" help:"shared secret of the TURN credentials minted at join (at least 16 characters); the embedded server's default is random at each start"`
	TURNCredentialTTL  time.Duration `key:"turn-credential-ttl" help:"how long TURN credentials minted at join stay valid (e.g. 6h)"`
	TURNRelayPorts     string        `key:"turn-relay-ports" help:"UDP port range of relays, MIN-MAX"`
	TURNAllowPeer      []string      `key:"turn-allow-peer" help:"address ranges (CIDR) relays may reach although loopback, private, link-local or the server's own, comma-separated"`
	TURNMaxAllocations int           `key:"turn-max-allocations" help:"TURN allocations one participant may hold (0: unlimited)"`
	TURNMaxLifetime    time.Duration `key:"turn-max-lifetime" help:"close a TURN allocation this long after it was made, however it is refreshed (e.g. 6h)"`
	TURNBandwidth      int           `key:"turn-bandwidth" help:"bits per second one TURN allocation relays in each direction (0: unlimited)"`
	ICEServers         []string      `key:"ice-server" help:"external STUN/TURN server URLs for clients, comma-separated; turn: and turns: ones get ice-username/ice-credential, or credentials minted with turn-secret"`
	ICEUsername        string        `key:"ice-username" help:"static username for the ice-server TURN URLs"`
	ICECredential      string        `key:"ice-credential" secret:"true" help:"static credential for the ice-server TURN URLs"`
}

// Default is the configuration for a laptop: loopback only, fixed documented ports.
func Default() Config {
	return Config{
		HTTP:         "127.0.0.1:7880",
		UDPPort:      7882,
		TCPPort:      7881,
		LastN:        8,
		VideoPausing: true,
		P2P:          true,
		AudioSlots:   3,
		LogLevel:     "info",
		Region:       "default",

		MaxRooms:        1000,
		MaxParticipants: 200,
		MaxTracks:       4,
		JoinsPerIP:      120,
		RoomsPerIP:      20,
		MediaTimeout:    30 * time.Second,
		MaxConnsPerIP:   64,
		HTTPIdleTimeout: 60 * time.Second,
		SignalingRate:   20,
		SignalingBurst:  100,
		MaxMessageBytes: 64 << 10,
		DrainTimeout:    30 * time.Second,
		Overload:        true,
		OverloadCPU:     0.85,
		UnderloadCPU:    0.6,

		TURNRealm:          "podium",
		TURNCredentialTTL:  6 * time.Hour,
		TURNRelayPorts:     "49152-65535",
		TURNMaxAllocations: 12,
		TURNMaxLifetime:    6 * time.Hour,
		TURNBandwidth:      10_000_000,
	}
}

// Validate checks values that flags and YAML cannot type-check; errors name the key.
func (c *Config) Validate() error {
	var errs []error
	if _, port, err := net.SplitHostPort(c.HTTP); err != nil {
		errs = append(errs, fmt.Errorf("http: %q is not address:port: %w", c.HTTP, err))
	} else if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		errs = append(errs, fmt.Errorf("http: bad port %q", port))
	}
	if c.UDPPort < 0 || c.UDPPort > 65535 {
		errs = append(errs, fmt.Errorf("udp-port: %d out of range", c.UDPPort))
	}
	if c.LastN < -1 {
		errs = append(errs, fmt.Errorf("last-n: %d; use -1 for unlimited or a count >= 0", c.LastN))
	}
	if c.AudioSlots < 0 || c.AudioSlots > 16 { // each is a negotiated track; few talk at once
		errs = append(errs, fmt.Errorf("audio-slots: %d; use 0 (off) to 16", c.AudioSlots))
	}
	if c.TCPPort < 0 || c.TCPPort > 65535 {
		errs = append(errs, fmt.Errorf("tcp-port: %d out of range", c.TCPPort))
	}
	for _, list := range []struct {
		key string
		ips []string
	}{{"public-ip", c.PublicIPs}, {"media-ip", c.MediaIPs}} {
		for _, ip := range list.ips {
			// public-ip may pin one local address: PUBLIC/LOCAL.
			if pub, local, pinned := strings.Cut(ip, "/"); list.key == "public-ip" && pinned {
				if net.ParseIP(pub) == nil || net.ParseIP(local) == nil {
					errs = append(errs, fmt.Errorf("%s: %q is not an IP address or PUBLIC/LOCAL pair", list.key, ip))
				}
				continue
			}
			if net.ParseIP(ip) == nil {
				errs = append(errs, fmt.Errorf("%s: %q is not an IP address", list.key, ip))
			}
		}
	}
	for _, u := range c.STUN {
		if !strings.HasPrefix(u, "stun:") && !strings.HasPrefix(u, "stuns:") {
			errs = append(errs, fmt.Errorf("stun: %q must start with stun: or stuns:", u))
		}
	}
	if (c.TLSCert == "") != (c.TLSKey == "") {
		errs = append(errs, errors.New("tls-cert and tls-key must be given together"))
	}
	if c.TLSSelfSigned && c.TLSCert != "" {
		errs = append(errs, errors.New("tls-self-signed: cannot be combined with tls-cert"))
	}
	errs = append(errs, c.validateAccess()...)
	errs = append(errs, c.validateMetrics()...)
	errs = append(errs, c.validateLimits()...)
	errs = append(errs, c.validateCluster()...)
	errs = append(errs, c.validateTURN()...)
	errs = append(errs, c.validateOverload()...)
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("log-level: %q is not debug, info, warn or error", c.LogLevel))
	}
	return errors.Join(errs...)
}

// TLS reports whether HTTPS is served.
func (c *Config) TLS() bool { return c.TLSCert != "" || c.TLSSelfSigned }
