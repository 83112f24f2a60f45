package relay

import (
	"encoding/binary"
	"errors"
	"net/netip"
)

// Probe bodies (KindProbe, stream id 0), node → node: a node probes every
// other node's relay, which echoes each probe at once to the address the
// probe names; the round trip is the relay RTT between them (probe_rtt.go).
// The reply address rides in the sealed body, not the UDP source: the echo
// takes the path the other bridges' media to the prober takes (an emulated
// WAN path in front of its socket, say).
//
//	probe: 0 type 1 | 1..4 sequence number | 5..20 reply address (IPv6; IPv4 mapped) | 21..22 reply port
//	echo:  0 type 2 | 1..4 the probe's sequence number
const (
	probeRequest = 1
	probeEcho    = 2
	probeLen     = 23
	echoLen      = 5
)

// Probe is a parsed probe body.
type Probe struct {
	Echo  bool
	Seq   uint32
	Reply netip.AddrPort // the probe's; zero in an echo
}

var ErrProbe = errors.New("relay: malformed probe")

// ParseProbe reads body into p.
func ParseProbe(body []byte, p *Probe) error {
	*p = Probe{}
	if len(body) < 1 {
		return ErrProbe
	}
	switch body[0] {
	case probeRequest:
		if len(body) != probeLen {
			return ErrProbe
		}
		addr := netip.AddrFrom16([16]byte(body[5:21])).Unmap()
		port := binary.BigEndian.Uint16(body[21:])
		if port == 0 || addr.IsUnspecified() || addr.IsMulticast() {
			return ErrProbe
		}
		p.Reply = netip.AddrPortFrom(addr, port)
	case probeEcho:
		if len(body) != echoLen {
			return ErrProbe
		}
		p.Echo = true
	default:
		return ErrProbe
	}
	p.Seq = binary.BigEndian.Uint32(body[1:])
	return nil
}

// AppendProbe appends a probe body to b: sequence number seq, echo to reply.
func AppendProbe(b []byte, seq uint32, reply netip.AddrPort) []byte {
	b = append(b, probeRequest)
	b = binary.BigEndian.AppendUint32(b, seq)
	a := reply.Addr().As16()
	b = append(b, a[:]...)
	return binary.BigEndian.AppendUint16(b, reply.Port())
}

// AppendEcho appends the echo of probe seq to b.
func AppendEcho(b []byte, seq uint32) []byte {
	return binary.BigEndian.AppendUint32(append(b, probeEcho), seq)
}
