package peer

import (
	"bytes"
	"encoding/gob"
	"log/slog"
	"net/netip"
	"os"
	"sync"

	"github.com/pion/dtls/v3"
	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/wire"
)

// PionDataPlaneEnv chooses how much of the media path is the SFU's own:
// "pion" keeps every connection's RTP and RTCP on pion's SRTP sessions (the
// path before the own data plane, e.g. to compare them); "send" has the data
// plane send RTP and leaves received RTCP to pion; "all" also takes the
// receivers' SRTCP at the socket (ingress.go). Unset means defaultDataPlane.
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
	in := &routeIngress{ingress: e.ingress}
	dt := pc.SCTP().Transport()
	ice := dt.ICETransport()
	ice.OnSelectedCandidatePairChange(func(p *webrtc.ICECandidatePair) {
		d := e.dest(p)
		r.SetDest(d)
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
		if handle != nil {
			in.start(keys, handle)
		}
	})
	return r
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

func (ri *routeIngress) start(k wire.Keys, handle RTCPHandler) {
	ctx, err := k.Inbound()
	if err != nil {
		slog.Warn("SRTCP context", "err", err)
		return
	}
	ri.mu.Lock()
	defer ri.mu.Unlock()
	if ri.closed {
		return
	}
	ri.conn = &inConn{ctx: ctx, handle: handle}
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
// pair on one of our sockets.
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
	s := e.net.socket(netip.AddrPortFrom(local.Unmap(), p.Local.Port))
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

// defaultDataPlane is the mode without PionDataPlaneEnv.
const defaultDataPlane = "send"

func dataPlaneMode() string {
	if m := os.Getenv(PionDataPlaneEnv); m != "" {
		return m
	}
	return defaultDataPlane
}

func pionOnlyFromEnv() bool { return dataPlaneMode() == "pion" }
func sendOnlyFromEnv() bool { return dataPlaneMode() == "send" }
