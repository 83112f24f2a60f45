package server

import (
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/podium-sfu/podium/internal/config"
	"github.com/podium-sfu/podium/internal/turn"
	"github.com/podium-sfu/podium/internal/web"
)

// startTURN starts the embedded TURN server when configured (nil otherwise)
// and returns the minter of every participant's ICE servers (nil when there
// are no TURN servers to hand out). TURN over TLS uses the HTTP server's
// certificate (tls-cert, or a self-signed one for httpAddr).
func startTURN(cfg config.Config, httpAddr net.Addr, sfuAddrs []net.Addr, log *slog.Logger) (*turn.Server, *turn.Minter, error) {
	secret := []byte(cfg.TURNSecret)
	if len(secret) == 0 {
		secret = make([]byte, 32) // only the embedded server checks what it mints
		_, _ = rand.Read(secret)
		secret = []byte(base64.RawStdEncoding.EncodeToString(secret))
	}
	minter := &turn.Minter{Secret: secret, TTL: cfg.TURNCredentialTTL}
	var srv *turn.Server
	if cfg.TURN() {
		var tlsCfg *tls.Config
		if cfg.TURNTLSPort != 0 {
			var err error
			if tlsCfg, err = tlsConfig(cfg, httpAddr); err != nil {
				return nil, nil, err
			}
		}
		var sfuPort int
		for _, a := range sfuAddrs { // the ICE mux: one port on every address
			if u, ok := a.(*net.UDPAddr); ok {
				sfuPort = u.Port
			}
		}
		var err error
		if srv, err = newTURN(cfg, secret, tlsCfg, sfuPort, log); err != nil {
			return nil, nil, err
		}
		host := cfg.TURNURLHost()
		minter.Minted = turn.EmbeddedURLs(host, cfg.TURNUDPPort, cfg.TURNTCPPort, cfg.TURNTLSPort)
		log.Info("TURN server", "urls", minter.Minted, "relay-ip", cfg.TURNRelayIP(), "relay-ports", cfg.TURNRelayPorts,
			"allow-peer", cfg.TURNAllowPeer, "max-allocations", cfg.TURNMaxAllocations, "bandwidth", cfg.TURNBandwidth)
	}
	var static []string
	for _, u := range cfg.ICEServers {
		switch {
		case !config.ICEServerNeedsCredentials(u):
			static = append(static, u)
		case cfg.ICEUsername != "":
			minter.Static = append(minter.Static, turn.ICEServer{URLs: []string{u}, Username: cfg.ICEUsername, Credential: cfg.ICECredential})
		default:
			minter.Minted = append(minter.Minted, u) // the same secret as that server
		}
	}
	if len(static) > 0 {
		minter.Static = append(minter.Static, turn.ICEServer{URLs: static})
	}
	if len(minter.Minted) == 0 && len(minter.Static) == 0 {
		return srv, nil, nil
	}
	return srv, minter, nil
}

func newTURN(cfg config.Config, secret []byte, tlsCfg *tls.Config, sfuPort int, log *slog.Logger) (*turn.Server, error) {
	listen := cfg.TURNListenIP()
	addr := func(port int) string {
		if port == 0 {
			return ""
		}
		return net.JoinHostPort(listen, strconv.Itoa(port))
	}
	own, err := turn.OwnAddrs()
	if err != nil {
		return nil, fmt.Errorf("turn: the server's addresses: %w", err)
	}
	relayIP := cfg.TURNRelayIP()
	for _, s := range append([]string{relayIP.String()}, cfg.PublicIPs...) {
		pub, _, _ := strings.Cut(s, "/")
		if a, err := netip.ParseAddr(pub); err == nil {
			own = append(own, a)
		}
	}
	bind := netip.IPv4Unspecified()
	if a, err := netip.ParseAddr(listen); err == nil {
		bind = a
	}
	lo, hi := cfg.TURNRelayRange()
	tc := turn.Config{
		Realm: cfg.TURNRealm, Secret: secret,
		UDPAddr: addr(cfg.TURNUDPPort), TCPAddr: addr(cfg.TURNTCPPort), TLSAddr: addr(cfg.TURNTLSPort),
		TLS:          tlsCfg,
		WrapListener: func(ln net.Listener) net.Listener { return web.LimitConns(ln, cfg.MaxConnsPerIP) },
		RelayBind:    listen, PublicIP: relayIP, RelayMin: lo, RelayMax: hi,
		Peers: turn.PolicyParams{Allow: cfg.TURNAllowPrefixes(), Own: own, RelayIPs: relayIPs(bind, relayIP),
			SFUPort: uint16(sfuPort)},
		MaxAllocations: cfg.TURNMaxAllocations, MaxLifetime: cfg.TURNMaxLifetime, Bandwidth: int64(cfg.TURNBandwidth),
		Log: log.With("component", "turn"),
	}
	return turn.New(tc)
}

// relayIPs are where a relay is reached: where relays listen, and the address
// announced for them (behind a 1:1 NAT, packets to it come back in).
func relayIPs(bind netip.Addr, announced net.IP) []netip.Addr {
	out := []netip.Addr{bind}
	if a, ok := netip.AddrFromSlice(announced); ok {
		out = append(out, a.Unmap())
	}
	return out
}

// TURN is the embedded TURN server (nil when off): tests read its addresses and counters.
func (s *Server) TURN() *turn.Server { return s.turn }

var (
	turnAllocationsDesc = desc("podium_turn_allocations", "TURN allocations (relays) open on the embedded TURN server.")
	turnBytesDesc       = desc("podium_turn_relayed_bytes_total", "Bytes the embedded TURN server relayed, by direction (to-peers, from-peers).", "direction")
	turnDroppedDesc     = desc("podium_turn_dropped_bytes_total", "Bytes a TURN relay dropped over its allocation's bandwidth (turn-bandwidth).")
	turnRefusedDesc     = desc("podium_turn_refused_total", "TURN permissions (CreatePermission, ChannelBind) and relayed packets refused by the peer policy.", "stage")
	turnAuthFailDesc    = desc("podium_turn_auth_failures_total", "TURN requests refused for their credentials, by reason (malformed, expired, integrity).", "reason")
	turnQuotaDesc       = desc("podium_turn_quota_refused_total", "TURN allocations refused over turn-max-allocations.")
	turnLifetimeDesc    = desc("podium_turn_lifetime_closed_total", "TURN allocations closed at turn-max-lifetime.")
)

var turnDescs = []*prometheus.Desc{turnAllocationsDesc, turnBytesDesc, turnDroppedDesc, turnRefusedDesc, turnAuthFailDesc, turnQuotaDesc, turnLifetimeDesc}

// collectTURN reports the embedded TURN server's counters (zeros when it is off).
func (s *Server) collectTURN(ch chan<- prometheus.Metric) {
	var st turn.Stats
	if s.turn != nil {
		st = s.turn.Stats()
	}
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	ch <- prometheus.MustNewConstMetric(turnAllocationsDesc, prometheus.GaugeValue, float64(st.Allocations))
	counter(turnBytesDesc, st.BytesToPeers, "to-peers")
	counter(turnBytesDesc, st.BytesFromPeers, "from-peers")
	counter(turnDroppedDesc, st.OverBandwidth)
	counter(turnRefusedDesc, st.RefusedPerms, "permission")
	counter(turnRefusedDesc, st.RefusedPackets, "packet")
	counter(turnAuthFailDesc, st.AuthMalformed, "malformed")
	counter(turnAuthFailDesc, st.AuthExpired, "expired")
	counter(turnAuthFailDesc, st.AuthIntegrity, "integrity")
	counter(turnQuotaDesc, st.QuotaRefused)
	counter(turnLifetimeDesc, st.LifetimeClosed)
}
