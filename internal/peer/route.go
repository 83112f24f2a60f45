package peer

import (
	"bytes"
	"encoding/gob"
	"log/slog"
	"net/netip"
	"os"

	"github.com/pion/dtls/v3"
	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/wire"
)

// PionDataPlaneEnv, set to "pion", keeps every connection's RTP on pion's
// SRTP sessions (the path before the own data plane), e.g. to compare them.
const PionDataPlaneEnv = "PODIUM_DATAPLANE"

// Route ties pc to a data-plane route: once DTLS is connected the route gets
// the SRTP keys, and it follows the selected ICE pair (a UDP pair on one of
// our sockets is written to directly; any other leaves RTP to pion). Call it
// right after creating pc, before any negotiation.
func (e *Engine) Route(pc *webrtc.PeerConnection) *wire.Route {
	r := &wire.Route{}
	if e.pionOnly {
		r.UsePion()
		return r
	}
	dt := pc.SCTP().Transport()
	ice := dt.ICETransport()
	ice.OnSelectedCandidatePairChange(func(p *webrtc.ICECandidatePair) {
		r.SetDest(e.dest(p))
	})
	dt.OnStateChange(func(st webrtc.DTLSTransportState) {
		if st != webrtc.DTLSTransportStateConnected {
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
	})
	return r
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

func pionOnlyFromEnv() bool { return os.Getenv(PionDataPlaneEnv) == "pion" }
