package peer

import (
	"net"
	"net/netip"
	"time"

	"github.com/pion/transport/v4"
	"github.com/pion/transport/v4/stdnet"

	"github.com/podium-sfu/podium/internal/latency"
)

// stampingNet is the operating system's network whose UDP sockets stamp sampled
// RTP packets as they are read (latency.Stamps), so the forwarding path can
// measure the SFU's latency from the moment a packet left the socket.
type stampingNet struct {
	*stdnet.Net
	stamps *latency.Stamps
}

func newStampingNet(stamps *latency.Stamps) (*stampingNet, error) {
	n, err := stdnet.NewNet()
	if err != nil {
		return nil, err
	}
	return &stampingNet{Net: n, stamps: stamps}, nil
}

// ListenUDP wraps the socket.
func (n *stampingNet) ListenUDP(network string, laddr *net.UDPAddr) (transport.UDPConn, error) {
	c, err := net.ListenUDP(network, laddr)
	if err != nil {
		return nil, err
	}
	return &stampingConn{UDPConn: c, stamps: n.stamps}, nil
}

// stampingConn implements ice.AddrPortReaderWriter, which the UDP mux reads
// through, as well as ReadFrom.
type stampingConn struct {
	*net.UDPConn
	stamps *latency.Stamps
}

func (c *stampingConn) ReadFromAddrPort(b []byte) (int, netip.AddrPort, error) {
	n, addr, err := c.UDPConn.ReadFromUDPAddrPort(b)
	if n > 0 {
		c.stamps.Observe(b[:n], time.Now())
	}
	return n, addr, err
}

func (c *stampingConn) WriteToAddrPort(b []byte, addr netip.AddrPort) (int, error) {
	return c.UDPConn.WriteToUDPAddrPort(b, addr)
}

func (c *stampingConn) ReadFrom(b []byte) (int, net.Addr, error) {
	n, addr, err := c.UDPConn.ReadFrom(b)
	if n > 0 {
		c.stamps.Observe(b[:n], time.Now())
	}
	return n, addr, err
}
