package peer

import (
	"bytes"
	"encoding/gob"
	"log/slog"
	"net/netip"
	"os"
	"strings"
	"sync"

	"github.com/pion/dtls/v3"
	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/wire"
)

// PionDataPlaneEnv chooses how much of the media path is the SFU's own:
// "pion" keeps every connection's RTP and RTCP on pion's SRTP sessions (the
// path before the own data plane, e.g. to compare them); "send" has the data
// plane send RTP and leaves received RTCP to pion; "rtp" also takes the
// publishers' SRTP at the socket (the receive half: ingress.takeRTP, with
// the SFU's own receiver reports and NACKs to the publishers) and the
// receivers' transport-wide feedback (ingress.take, feedbackOnly); "all"
// takes all the receivers' SRTCP there. Unset means defaultDataPlane.
const PionDataPlaneEnv = "PODIUM_DATAPLANE"

// Route ties pc to a data-plane route: once DTLS is connected the route gets
// the SRTP keys, and it follows the selected ICE pair (a UDP pair on one of
// our sockets is written to directly; any other leaves RTP to pion). With
// handle, the connection's SRTCP from that pair is taken at the socket and
// given to handle (see ingress.go). Call it right after creating pc, before
// any negotiation.
func (e *Engine) Route(pc *webrtc.PeerConnection, handle RTCPHandler) *wire.Route {
	r := &wire.Route{}
	if e.pionOnly {
		r.UsePion()
		return r
	}
	if e.sendOnly {
		handle = nil
	}
	e.follow(pc, r, &inConn{handle: handle, feedbackOnly: e.feedbackOnly})
	return r
}

// Publish ties a publish connection to the data plane's receive side (modes
// rtp and all): once its DTLS is connected and its ICE pair is a UDP pair on one of
// our sockets, the SRTP of the streams taken with the returned Inbound is
// read at the socket (ingress.takeRTP) instead of by pion, and the
// transport-wide feedback to the publisher is sealed and sent by the data
// plane (twccFeedback.send); the route is the connection's, for the rest
// of what the SFU sends the publisher. Nils in the other modes: every
// received packet stays on pion's path. Call it right after creating pc,
// before any negotiation.
func (e *Engine) Publish(pc *webrtc.PeerConnection) (*wire.Inbound, *wire.Route) {
	if !e.ownsReceive {
		return nil, nil
	}
	in, r := wire.NewInbound(), &wire.Route{}
	e.follow(pc, r, &inConn{rtp: in})
	e.twcc.route(pc.ID(), r)
	return in, r
}

// OwnsReceive reports whether the publish connections' RTP is taken at the
// socket (modes rtp and all), where the SFU, not pion's interceptors, sends receiver
// reports and NACKs to the publishers (forward.UpTrack's receive log).
func (e *Engine) OwnsReceive() bool { return e.ownsReceive }

// follow keeps r's keys and destination, and c's place in the ingress table
// when it takes something (an RTCP handler or RTP streams), in step with pc's
// DTLS state and selected ICE pair.
func (e *Engine) follow(pc *webrtc.PeerConnection, r *wire.Route, c *inConn) {
	in := &routeIngress{ingress: e.ingress}
	dt := pc.SCTP().Transport()
	ice := dt.ICETransport()
	if e.consentAtSocket {
		c.consent = newConsent(r, &e.consent)
	}
	ice.OnSelectedCandidatePairChange(func(p *webrtc.ICECandidatePair) {
		d := e.dest(p)
		r.SetDest(d)
		if c.consent != nil {
			c.consent.moveTo(d)
		}
		in.moveTo(d)
	})
	dt.OnStateChange(func(st webrtc.DTLSTransportState) {
		switch st {
		case webrtc.DTLSTransportStateClosed, webrtc.DTLSTransportStateFailed:
			in.close()
			return
		case webrtc.DTLSTransportStateConnected:
		default:
			return
		}
		// Runs under the transport's lock (see dtlskeys.go): no transport
		// methods here.
		isClient, err := dtlsIsClient(dt)
		var keys wire.Keys
		if err == nil {
			keys, err = exportKeys(dt, isClient)
		}
		if err != nil {
			slog.Warn("SRTP keys not exported: this connection's media stays on pion's path", "err", err)
			r.UsePion()
			return
		}
		r.SetKeys(keys)
		if c.consent != nil {
			go c.consent.learn(ice)
		}
		if c.handle != nil || c.rtp != nil || c.consent != nil {
			in.start(keys, c)
		}
	})
}

// routeIngress keeps one connection's entry in the ingress table at the
// address of its current pair.
type routeIngress struct {
	ingress *ingress
	mu      sync.Mutex
	conn    *inConn // nil until keyed
	at      *wire.Dest
	closed  bool
}

func (ri *routeIngress) start(k wire.Keys, c *inConn) {
	if c.rtp != nil {
		o, err := k.RTPOpener()
		if err != nil {
			slog.Warn("SRTP opener", "err", err)
			return
		}
		c.rtp.SetOpener(o) // its own: pion's context keeps the streams not taken
	}
	open, err := k.RTCPOpener()
	if err != nil {
		slog.Warn("SRTCP opener", "err", err)
		if c.rtp == nil {
			return
		}
		// A publish connection's sender reports stay with pion (open nil).
	}
	c.open = open
	ri.mu.Lock()
	defer ri.mu.Unlock()
	if ri.closed {
		return
	}
	ri.conn = c
	ri.placeLocked(ri.at)
}

// moveTo follows the selected pair (before the keys too: start places the
// entry at the pair's address then).
func (ri *routeIngress) moveTo(d *wire.Dest) {
	ri.mu.Lock()
	defer ri.mu.Unlock()
	ri.at = d
	if ri.conn != nil && !ri.closed {
		ri.placeLocked(d)
	}
}

func (ri *routeIngress) placeLocked(d *wire.Dest) {
	var addr netip.AddrPort
	if d != nil {
		addr = d.Addr
		ri.ingress.set(addr, ri.conn, ri.conn)
	} else {
		ri.ingress.set(addr, nil, ri.conn)
	}
}

func (ri *routeIngress) close() {
	ri.mu.Lock()
	defer ri.mu.Unlock()
	ri.closed = true
	if ri.conn != nil {
		ri.ingress.set(netip.AddrPort{}, nil, ri.conn)
	}
}

// dest is the data plane's destination for pair p: nil unless p is a UDP
// pair on one of our sockets (announced as itself or, behind 1:1 NAT, as
// its public address).
func (e *Engine) dest(p *webrtc.ICECandidatePair) *wire.Dest {
	if p == nil || p.Local == nil || p.Remote == nil || p.Local.Protocol != webrtc.ICEProtocolUDP {
		return nil
	}
	local, err := netip.ParseAddr(p.Local.Address)
	if err != nil {
		return nil
	}
	remote, err := netip.ParseAddr(p.Remote.Address)
	if err != nil {
		return nil
	}
	s := e.net.socket(netip.AddrPortFrom(e.behindNAT(local.Unmap()), p.Local.Port))
	if s == nil {
		return nil
	}
	return wire.NewDest(s, netip.AddrPortFrom(remote.Unmap(), p.Remote.Port))
}

// dtlsIsClient reads our DTLS role from the connection's state (public, but
// only in its serialized form).
func dtlsIsClient(t *webrtc.DTLSTransport) (bool, error) {
	c, err := dtlsConn(t)
	if err != nil {
		return false, err
	}
	if c == nil {
		return false, errNoDTLSState
	}
	state, ok := c.ConnectionState()
	if !ok {
		return false, errNoDTLSState
	}
	return stateIsClient(&state)
}

func stateIsClient(s *dtls.State) (bool, error) {
	b, err := s.MarshalBinary()
	if err != nil {
		return false, err
	}
	var role struct{ IsClient bool }
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&role); err != nil {
		return false, err
	}
	return role.IsClient, nil
}

// defaultDataPlane is the mode without PionDataPlaneEnv: rtp since the
// browser suites it affects passed with it (adaptation at 5 % loss and at
// 128 kb/s, conference, Last N, simulcast); all (receivers' SRTCP at the
// socket too) still fails the 128 kb/s one (docs/performance.md).
const defaultDataPlane = "rtp"

func dataPlaneMode() string {
	if m := os.Getenv(PionDataPlaneEnv); m != "" {
		return m
	}
	return defaultDataPlane
}

func pionOnlyFromEnv() bool { return dataPlaneMode() == "pion" }

// sendOnlyFromEnv: received RTCP stays on pion's path (every mode but rtp
// and all).
func sendOnlyFromEnv() bool { m := dataPlaneMode(); return m != "rtp" && m != "all" }

// feedbackOnlyFromEnv: of the received RTCP only the transport-wide feedback
// is taken at the socket (rtp).
func feedbackOnlyFromEnv() bool { return dataPlaneMode() == "rtp" }

func ownsReceiveFromEnv() bool { m := dataPlaneMode(); return m == "rtp" || m == "all" }

// behindNAT is the local address of our socket that announces public
// address a (public-ip: PUBLIC/LOCAL, or a bare PUBLIC for our one socket's
// address), else a itself. A bare PUBLIC with several sockets stays
// unresolved: their candidates share it, and their pairs stay on pion's path.
func (e *Engine) behindNAT(a netip.Addr) netip.Addr {
	for _, entry := range e.cfg.PublicIPs {
		pub, loc, mapped := strings.Cut(entry, "/")
		if p, err := netip.ParseAddr(pub); err != nil || p.Unmap() != a {
			continue
		}
		if mapped {
			if l, err := netip.ParseAddr(loc); err == nil {
				return l.Unmap()
			}
			continue
		}
		if bound := e.net.boundAddrs(); len(bound) == 1 {
			return bound[0]
		}
	}
	return a
}
