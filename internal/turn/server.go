// Package turn is Podium's embedded TURN server (pion/turn) and the short-lived
// credentials clients get for it, or for an external TURN server, at join.
//
// The server relays UDP only, for clients that reach it over UDP, TCP or TLS;
// it authenticates every request with TURN REST credentials (credentials.go),
// refuses to relay to internal addresses (policy.go) and bounds each user's
// allocations in number, lifetime and bandwidth (relay.go).
package turn

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/logging"
	pturn "github.com/pion/turn/v5"
)

// Config configures the embedded TURN server.
type Config struct {
	Realm  string
	Secret []byte
	// UDPAddr, TCPAddr and TLSAddr are where clients reach the server
	// (address:port; "" leaves that transport off). TLSAddr needs TLS.
	UDPAddr, TCPAddr, TLSAddr string
	TLS                       *tls.Config
	// WrapListener, when set, wraps the TCP and TLS listeners' raw TCP
	// listener (the HTTP port's per-address connection limit).
	WrapListener func(net.Listener) net.Listener
	// RelayBind is the IP relays listen on ("" or 0.0.0.0: all); PublicIP the
	// address announced to clients for them (required).
	RelayBind string
	PublicIP  net.IP
	// RelayMin and RelayMax are the relay port range.
	RelayMin, RelayMax uint16
	// Peers configure the policy deciding which peers relays reach (its Live
	// set is the server's).
	Peers PolicyParams
	// MaxAllocations per user (0: unlimited); MaxLifetime closes an
	// allocation however often it is refreshed (0: no cap); Bandwidth is
	// each allocation's limit in each direction, bits/s (0: unlimited).
	MaxAllocations int
	MaxLifetime    time.Duration
	Bandwidth      int64
	// IdleTimeout closes a TCP or TLS client connection that sent nothing for
	// this long (0: 2 minutes); browsers send consent checks every few seconds.
	IdleTimeout time.Duration
	// Now is the clock credentials and buckets read (nil: time.Now).
	Now func() time.Time
	Log *slog.Logger
}

// Server is a running TURN server.
type Server struct {
	pion    *pturn.Server
	relays  *relays
	c       *counters
	udp     net.PacketConn
	tcp     net.Listener
	tlsLn   net.Listener
	log     *slog.Logger
	closing atomic.Bool
	conns   *connSet // TCP and TLS client connections
}

// Stats is a snapshot of the server's counters.
type Stats struct {
	Allocations      int64  // open now
	AllocationsTotal uint64 // ever created
	BytesToPeers     uint64
	BytesFromPeers   uint64
	OverBandwidth    uint64 // bytes dropped over an allocation's bandwidth
	RefusedPerms     uint64 // CreatePermission / ChannelBind refused by the policy
	RefusedPackets   uint64 // packets to or from an address the policy refuses
	QuotaRefused     uint64 // allocations refused over the per-user limit
	LifetimeClosed   uint64 // allocations closed at the lifetime cap
	AuthMalformed    uint64
	AuthExpired      uint64
	AuthIntegrity    uint64
}

// New starts the server on the configured addresses.
func New(cfg Config) (*Server, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = 2 * time.Minute
	}
	if len(cfg.Secret) == 0 {
		return nil, errors.New("turn: no secret")
	}
	s := &Server{c: &counters{}, log: cfg.Log, conns: &connSet{m: map[net.Conn]struct{}{}}}
	live := &PortSet{}
	cfg.Peers.Live = live
	policy := NewPolicy(cfg.Peers)
	s.relays = &relays{policy: policy, live: live, bind: cfg.RelayBind, public: cfg.PublicIP, min: cfg.RelayMin, max: cfg.RelayMax,
		perUser: cfg.MaxAllocations, maxLifetime: cfg.MaxLifetime, now: cfg.Now, c: s.c, users: map[string]int{}}
	if cfg.Bandwidth > 0 {
		s.relays.bytesPerSec = float64(cfg.Bandwidth) / 8
		s.relays.burst = max(int(s.relays.bytesPerSec/5), 16<<10) // 200 ms, at least a few packets
	}
	if err := s.relays.Validate(); err != nil {
		return nil, err
	}
	permit := func(_ net.Addr, peer net.IP) bool {
		ip, ok := netip.AddrFromSlice(peer)
		if ok && policy.PermitIP(ip) {
			return true
		}
		s.c.refusedPerms.Add(1)
		return false
	}
	sc := pturn.ServerConfig{
		Realm:         cfg.Realm,
		AuthHandler:   s.authHandler(cfg.Secret, cfg.Realm, cfg.Now),
		QuotaHandler:  func(user, _ string, _ net.Addr) bool { return s.quota(user) },
		LoggerFactory: loggerFactory{cfg.Log},
		EventHandler: pturn.EventHandler{OnAuth: func(_, _ net.Addr, _, _, _, _ string, ok bool) {
			if !ok {
				s.c.authIntegrity.Add(1)
			}
		}},
	}
	if err := s.listen(cfg, &sc, permit); err != nil {
		s.closeListeners()
		return nil, err
	}
	srv, err := pturn.NewServer(sc)
	if err != nil {
		s.closeListeners()
		return nil, fmt.Errorf("turn: %w", err)
	}
	s.pion = srv
	return s, nil
}

func (s *Server) listen(cfg Config, sc *pturn.ServerConfig, permit pturn.PermissionHandler) error {
	if cfg.UDPAddr != "" {
		pc, err := net.ListenPacket("udp", cfg.UDPAddr)
		if err != nil {
			return fmt.Errorf("turn udp %s: %w", cfg.UDPAddr, err)
		}
		s.udp = pc
		sc.PacketConnConfigs = append(sc.PacketConnConfigs, pturn.PacketConnConfig{PacketConn: pc, RelayAddressGenerator: s.relays, PermissionHandler: permit})
	}
	tcp := func(addr string) (net.Listener, error) {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, err
		}
		if cfg.WrapListener != nil {
			ln = cfg.WrapListener(ln)
		}
		return &idleListener{Listener: ln, idle: cfg.IdleTimeout, conns: s.conns}, nil
	}
	if cfg.TCPAddr != "" {
		ln, err := tcp(cfg.TCPAddr)
		if err != nil {
			return fmt.Errorf("turn tcp %s: %w", cfg.TCPAddr, err)
		}
		s.tcp = ln
		sc.ListenerConfigs = append(sc.ListenerConfigs, pturn.ListenerConfig{Listener: ln, RelayAddressGenerator: s.relays, PermissionHandler: permit})
	}
	if cfg.TLSAddr != "" {
		if cfg.TLS == nil {
			return errors.New("turn tls: no certificate")
		}
		ln, err := tcp(cfg.TLSAddr)
		if err != nil {
			return fmt.Errorf("turn tls %s: %w", cfg.TLSAddr, err)
		}
		s.tlsLn = tls.NewListener(ln, cfg.TLS)
		sc.ListenerConfigs = append(sc.ListenerConfigs, pturn.ListenerConfig{Listener: s.tlsLn, RelayAddressGenerator: s.relays, PermissionHandler: permit})
	}
	if s.udp == nil && s.tcp == nil && s.tlsLn == nil {
		return errors.New("turn: no listener configured")
	}
	return nil
}

// authHandler checks a request's username (credentials.go) at the injected
// time and gives pion the key its message integrity must verify with.
func (s *Server) authHandler(secret []byte, realm string, now func() time.Time) pturn.AuthHandler {
	return func(ra *pturn.RequestAttributes) (string, []byte, bool) {
		user, password, err := Check(secret, ra.Username, now())
		switch {
		case errors.Is(err, ErrExpired):
			s.c.authExpired.Add(1)
			return "", nil, false
		case err != nil:
			s.c.authMalformed.Add(1)
			return "", nil, false
		case ra.Realm != realm:
			s.c.authIntegrity.Add(1)
			return "", nil, false
		}
		return user, pturn.GenerateAuthKey(ra.Username, ra.Realm, password), true
	}
}

func (s *Server) quota(user string) bool {
	if s.relays.underQuota(user) {
		return true
	}
	s.c.quota.Add(1)
	return false
}

// UDPAddr, TCPAddr and TLSAddr are where the server listens (nil when off).
func (s *Server) UDPAddr() net.Addr {
	if s.udp == nil {
		return nil
	}
	return s.udp.LocalAddr()
}

// TCPAddr is where TURN over TCP listens (nil when off).
func (s *Server) TCPAddr() net.Addr {
	if s.tcp == nil {
		return nil
	}
	return s.tcp.Addr()
}

// TLSAddr is where TURN over TLS listens (nil when off).
func (s *Server) TLSAddr() net.Addr {
	if s.tlsLn == nil {
		return nil
	}
	return s.tlsLn.Addr()
}

// Stats returns the counters now.
func (s *Server) Stats() Stats {
	c := s.c
	return Stats{
		Allocations: c.allocations.Load(), AllocationsTotal: c.allocationsTotal.Load(),
		BytesToPeers: c.toPeers.Load(), BytesFromPeers: c.fromPeers.Load(), OverBandwidth: c.overBandwidth.Load(),
		RefusedPerms: c.refusedPerms.Load(), RefusedPackets: c.refusedPackets.Load(),
		QuotaRefused: c.quota.Load(), LifetimeClosed: c.expired.Load(),
		AuthMalformed: c.authMalformed.Load(), AuthExpired: c.authExpired.Load(), AuthIntegrity: c.authIntegrity.Load(),
	}
}

// Close stops the server and closes every allocation.
func (s *Server) Close() error {
	if s.closing.Swap(true) {
		return nil
	}
	err := s.pion.Close()
	s.conns.closeAll()
	return err
}

func (s *Server) closeListeners() {
	for _, c := range []interface{ Close() error }{s.udp, s.tcp, s.tlsLn} {
		if c != nil {
			_ = c.Close()
		}
	}
}

// idleListener closes client connections that send nothing for a while (a
// TCP client of pion's server otherwise holds a goroutine forever).
type idleListener struct {
	net.Listener
	idle  time.Duration
	conns *connSet
}

func (l *idleListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	ic := &idleConn{Conn: c, idle: l.idle, conns: l.conns}
	l.conns.add(ic)
	return ic, nil
}

type idleConn struct {
	net.Conn
	idle  time.Duration
	conns *connSet
}

func (c *idleConn) Close() error {
	c.conns.remove(c)
	return c.Conn.Close()
}

// connSet holds the open client connections, for Close (pion closes only
// the listeners).
type connSet struct {
	mu     sync.Mutex
	m      map[net.Conn]struct{}
	closed bool
}

func (s *connSet) add(c net.Conn) {
	s.mu.Lock()
	closed := s.closed
	if !closed {
		s.m[c] = struct{}{}
	}
	s.mu.Unlock()
	if closed {
		_ = c.Close()
	}
}

func (s *connSet) remove(c net.Conn) {
	s.mu.Lock()
	delete(s.m, c)
	s.mu.Unlock()
}

func (s *connSet) closeAll() {
	s.mu.Lock()
	s.closed = true
	conns := make([]net.Conn, 0, len(s.m))
	for c := range s.m {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
}

func (c *idleConn) Read(p []byte) (int, error) {
	if err := c.Conn.SetReadDeadline(time.Now().Add(c.idle)); err != nil {
		return 0, err
	}
	return c.Conn.Read(p)
}

// loggerFactory sends pion's logs to slog at debug level: pion logs per
// packet at debug and trace (dropped here), and a client can make it log
// errors at will, so nothing of it is worth more than debug.
type loggerFactory struct{ log *slog.Logger }

func (f loggerFactory) NewLogger(scope string) logging.LeveledLogger {
	return pionLogger{f.log.With("scope", "pion-"+scope)}
}

type pionLogger struct{ log *slog.Logger }

func (l pionLogger) on() bool { return l.log.Enabled(context.Background(), slog.LevelDebug) }

func (l pionLogger) Trace(string)                   {}
func (l pionLogger) Tracef(string, ...any)          {}
func (l pionLogger) Debug(string)                   {}
func (l pionLogger) Debugf(string, ...any)          {}
func (l pionLogger) Info(msg string)                { l.out(msg) }
func (l pionLogger) Infof(format string, a ...any)  { l.outf(format, a...) }
func (l pionLogger) Warn(msg string)                { l.out(msg) }
func (l pionLogger) Warnf(format string, a ...any)  { l.outf(format, a...) }
func (l pionLogger) Error(msg string)               { l.out(msg) }
func (l pionLogger) Errorf(format string, a ...any) { l.outf(format, a...) }
func (l pionLogger) out(msg string) {
	if l.on() {
		l.log.Debug(msg)
	}
}
func (l pionLogger) outf(format string, a ...any) {
	if l.on() {
		l.log.Debug(fmt.Sprintf(format, a...))
	}
}

// OwnAddrs are the addresses of this host's interfaces.
func OwnAddrs() ([]netip.Addr, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	var out []netip.Addr
	for _, a := range addrs {
		if pre, err := netip.ParsePrefix(a.String()); err == nil {
			out = append(out, pre.Addr().Unmap())
		}
	}
	return out, nil
}
