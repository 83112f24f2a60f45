package server

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/podium-sfu/podium/internal/cascade"
	"github.com/podium-sfu/podium/internal/relay"
)

// The relay between bridges (docs/cluster.md, Relay): keys rotate every
// relayRotate, a new key is announced relayLead before use, and an old one is
// accepted for relayGrace once a newer one is known.
const (
	relayRotate = 10 * time.Minute
	relayLead   = 2 * time.Second
	relayGrace  = time.Minute
)

// relayParts are the relay's pieces, nil on a single node or without
// --relay-port.
type relayParts struct {
	transport *relay.Transport
	keys      *relay.Exchange
	cascade   *cascade.Cascade
	probes    *relay.Prober
	speakers  *speakerOrders // one speaker order per conference (clusterspeaker.go)
}

// startRelay opens the relay socket on --relay-port, exchanges keys over the
// cluster and joins the cascade.
func (s *Server) startRelay() error {
	port := s.cfg.RelayPort
	t, err := relay.Listen(relay.TransportConfig{Listen: ":" + strconv.Itoa(port), Lead: relayLead, Grace: relayGrace})
	if err != nil {
		return fmt.Errorf("relay-port: %w", err)
	}
	keys, err := relay.StartExchange(s.node.Conn(), s.node.ID(), t, relayRotate, s.log)
	if err != nil {
		_ = t.Close()
		return err
	}
	speakers, err := startSpeakerOrders(s.node, s.hub, s.log)
	if err != nil {
		keys.Close()
		_ = t.Close()
		return err
	}
	addr := netip.AddrPortFrom(advertisedIP(s.cfg.ClusterListen, s.url), uint16(port))
	c, err := cascade.Start(cascade.Config{Node: s.node, Hub: s.hub, Relay: t, Addr: addr, Log: s.log, RelayRTT: s.relayRTT})
	if err != nil {
		speakers.close()
		keys.Close()
		_ = t.Close()
		return err
	}
	probes := relay.StartProbes(t, relay.ProbeConfig{Targets: s.relayTargets, Reply: c.Addr})
	s.relay = relayParts{transport: t, keys: keys, cascade: c, probes: probes}
	s.relay.speakers = speakers
	s.source.relay.Store(&relayPaths{cascade: c, probes: probes})
	s.log.Info("relay", "addr", addr.String())
	return nil
}

// relayRTT is the relay probes' round trip to node (cascade.Config.RelayRTT).
func (s *Server) relayRTT(node string, now time.Time) (time.Duration, bool) {
	if r := s.source.relay.Load(); r != nil {
		return r.probes.RTT(node, now)
	}
	return 0, false
}

// relayTargets are the relay addresses of the other healthy nodes, which the
// relay probes (docs/cluster.md, Where the RTTs come from).
func (s *Server) relayTargets() map[string]netip.AddrPort {
	out := map[string]netip.AddrPort{}
	for _, n := range s.node.Nodes(time.Now()) {
		if n.ID == s.node.ID() || !n.Healthy {
			continue
		}
		if a, err := netip.ParseAddrPort(n.RelayAddr); err == nil {
			out[n.ID] = a
		}
	}
	return out
}

// advertisedIP is the address other bridges send relay datagrams to: the
// host of --cluster-listen (the network the bridges reach each other on),
// else the host of the node's URL, else — both wildcards — the address this
// machine sends from by default.
func advertisedIP(clusterListen, base string) netip.Addr {
	if host, _, err := net.SplitHostPort(clusterListen); err == nil {
		if a, err := netip.ParseAddr(host); err == nil && !a.IsUnspecified() {
			return a.Unmap()
		}
	}
	if u, err := url.Parse(base); err == nil {
		if a, err := netip.ParseAddr(u.Hostname()); err == nil && !a.IsUnspecified() {
			return a.Unmap()
		}
	}
	return outgoingIP()
}

// closeCluster leaves the cascade, closes the relay and leaves the cluster.
func (s *Server) closeCluster() {
	if r := s.relay; r.cascade != nil {
		r.speakers.close()
		s.source.relay.Store(nil)
		r.probes.Close()
		r.cascade.Close()
		r.keys.Close()
		_ = r.transport.Close()
		s.relay = relayParts{}
	}
	s.node.Close()
}

// Relay is the relay socket (nil without one), for tests.
func (s *Server) Relay() *relay.Transport { return s.relay.transport }

// Cascade is the server's part in conferences across bridges (nil without a relay).
func (s *Server) Cascade() *cascade.Cascade { return s.relay.cascade }

// RotateRelayKey starts a relay key rotation now.
func (s *Server) RotateRelayKey() {
	if s.relay.keys != nil {
		s.relay.keys.Rotate()
	}
}

// relayCollector exposes the relay's counters on /metrics.
type relayCollector struct{ s *Server }

var (
	relayDatagramsDesc = prometheus.NewDesc("podium_relay_datagrams_total",
		"Relay datagrams sent to and accepted from other bridges.", []string{"direction"}, nil)
	relayBytesDesc = prometheus.NewDesc("podium_relay_bytes_total",
		"Bytes of relay datagrams sent to and accepted from other bridges.", []string{"direction"}, nil)
	relayDroppedDesc = prometheus.NewDesc("podium_relay_dropped_total",
		"Relay datagrams dropped on arrival, by reason: malformed, unknown_key (no key of that sender and id, or retired), forged (did not authenticate), replayed (counter seen or too old).", []string{"reason"}, nil)
	relayRotationsDesc = prometheus.NewDesc("podium_relay_key_rotations_total",
		"Relay sending key rotations of this node.", nil, nil)
	relayStreamsDesc = prometheus.NewDesc("podium_relay_streams",
		"Streams relayed between bridges now: out to other bridges, in from them.", []string{"direction"}, nil)
	relayRemoteDesc = prometheus.NewDesc("podium_relay_remote_participants",
		"Participants of other bridges shown in rooms served here.", nil, nil)
)

func (c relayCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{relayDatagramsDesc, relayBytesDesc, relayDroppedDesc, relayRotationsDesc, relayStreamsDesc, relayRemoteDesc} {
		ch <- d
	}
}

func (c relayCollector) Collect(ch chan<- prometheus.Metric) {
	r := c.s.relay
	var st relay.Stats
	stats := &st
	var rotations uint64
	var cs cascade.Stats
	if r.transport != nil {
		stats = r.transport.Stats()
		rotations = r.keys.Rotations()
		cs = r.cascade.Stats()
	}
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	counter(relayDatagramsDesc, stats.Sent.Load(), "out")
	counter(relayDatagramsDesc, stats.Received.Load(), "in")
	counter(relayBytesDesc, stats.SentBytes.Load(), "out")
	counter(relayBytesDesc, stats.ReceivedBytes.Load(), "in")
	for _, d := range []relay.Drop{relay.Malformed, relay.UnknownKey, relay.Forged, relay.Replayed} {
		counter(relayDroppedDesc, stats.Dropped[d].Load(), d.String())
	}
	counter(relayRotationsDesc, rotations)
	ch <- prometheus.MustNewConstMetric(relayStreamsDesc, prometheus.GaugeValue, float64(cs.RelayedOut), "out")
	ch <- prometheus.MustNewConstMetric(relayStreamsDesc, prometheus.GaugeValue, float64(cs.RelayedIn), "in")
	ch <- prometheus.MustNewConstMetric(relayRemoteDesc, prometheus.GaugeValue, float64(cs.RemoteParticipants))
}
