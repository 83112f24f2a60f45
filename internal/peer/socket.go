package peer

import (
	"net"
	"net/netip"
	"time"

	"github.com/pion/transport/v4"
	"github.com/pion/transport/v4/stdnet"

	"github.com/podium-sfu/podium/internal/latency"
)

// observingNet is the operating system's network whose UDP sockets show every
// datagram, as it is read, to the transport-wide feedback (arrivals) and, when
// set, to latency.Stamps, so the forwarding path can measure the SFU's latency
// from the moment a packet left the socket.
type observingNet struct {
	*stdnet.Net
	arrivals *arrivals
	stamps   *latency.Stamps
}

func newObservingNet(a *arrivals, stamps *latency.Stamps) (*observingNet, error) {
	n, err := stdnet.NewNet()
	if err != nil {
		return nil, err
	}
	return &observingNet{Net: n, arrivals: a, stamps: stamps}, nil
}

// ListenUDP wraps the socket.
func (n *observingNet) ListenUDP(network string, laddr *net.UDPAddr) (transport.UDPConn, error) {
	c, err := net.ListenUDP(network, laddr)
	if err != nil {
		return nil, err
	}
	return &observingConn{UDPConn: c, arrivals: n.arrivals, stamps: n.stamps, kernelTime: enableRxTimestamps(c)}, nil
}

// observingConn implements ice.AddrPortReaderWriter, which the UDP mux reads
// through, as well as ReadFrom.
// One goroutine reads each socket (the UDP mux), so oob is reused.
type observingConn struct {
	*net.UDPConn
	arrivals   *arrivals
	stamps     *latency.Stamps
	kernelTime bool // datagrams carry the kernel's arrival stamp
	oob        [rxOOBSize]byte
}

// observe shows datagram b to the feedback with the time it reached the host
// (the kernel's stamp when there is one), and to the latency stamps with the
// time it left the socket.
func (c *observingConn) observe(b, oob []byte) {
	now := time.Now()
	arrived := now
	if t, ok := rxTime(oob); ok {
		arrived = t
	}
	c.arrivals.Observe(b, arrived)
	if c.stamps != nil {
		c.stamps.Observe(b, now)
	}
}

func (c *observingConn) ReadFromAddrPort(b []byte) (int, netip.AddrPort, error) {
	if !c.kernelTime {
		n, addr, err := c.UDPConn.ReadFromUDPAddrPort(b)
		if n > 0 {
			c.observe(b[:n], nil)
		}
		return n, addr, err
	}
	n, oobn, _, addr, err := c.UDPConn.ReadMsgUDPAddrPort(b, c.oob[:])
	if n > 0 {
		c.observe(b[:n], c.oob[:oobn])
	}
	return n, addr, err
}

func (c *observingConn) WriteToAddrPort(b []byte, addr netip.AddrPort) (int, error) {
	return c.UDPConn.WriteToUDPAddrPort(b, addr)
}

func (c *observingConn) ReadFrom(b []byte) (int, net.Addr, error) {
	n, addr, err := c.UDPConn.ReadFrom(b)
	if n > 0 {
		c.observe(b[:n], nil)
	}
	return n, addr, err
}
