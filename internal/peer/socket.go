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
// from the moment a packet left the socket. They drop forged plaintext DTLS
// records (guard) before pion reads them.
type observingNet struct {
	*stdnet.Net
	arrivals *arrivals
	stamps   *latency.Stamps
	guard    *guard
}

func newObservingNet(a *arrivals, stamps *latency.Stamps, g *guard) (*observingNet, error) {
	n, err := stdnet.NewNet()
	if err != nil {
		return nil, err
	}
	return &observingNet{Net: n, arrivals: a, stamps: stamps, guard: g}, nil
}

// ListenUDP wraps the socket.
func (n *observingNet) ListenUDP(network string, laddr *net.UDPAddr) (transport.UDPConn, error) {
	c, err := net.ListenUDP(network, laddr)
	if err != nil {
		return nil, err
	}
	return &observingConn{UDPConn: c, arrivals: n.arrivals, stamps: n.stamps, guard: n.guard, kernelTime: enableRxTimestamps(c)}, nil
}

// observingConn implements ice.AddrPortReaderWriter, which the UDP mux reads
// through, as well as ReadFrom.
// One goroutine reads each socket (the UDP mux), so oob is reused.
type observingConn struct {
	*net.UDPConn
	arrivals   *arrivals
	stamps     *latency.Stamps
	guard      *guard
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

// ReadFromAddrPort reads the next datagram the guard lets through.
func (c *observingConn) ReadFromAddrPort(b []byte) (int, netip.AddrPort, error) {
	for {
		n, addr, err := c.read(b)
		if err != nil || n == 0 || !c.guard.drop(b[:n]) {
			return n, addr, err
		}
	}
}

func (c *observingConn) read(b []byte) (int, netip.AddrPort, error) {
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

// ReadFrom is ReadFromAddrPort for readers that want a net.Addr.
func (c *observingConn) ReadFrom(b []byte) (int, net.Addr, error) {
	n, addr, err := c.ReadFromAddrPort(b)
	if err != nil && n == 0 {
		return n, nil, err
	}
	return n, net.UDPAddrFromAddrPort(addr), err
}
