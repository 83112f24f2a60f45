package peer

import (
	"errors"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/transport/v4"
	"github.com/pion/transport/v4/stdnet"

	"github.com/podium-sfu/podium/internal/latency"
	"github.com/podium-sfu/podium/internal/wire"
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
	ingress  *ingress
	// bound: the addresses of our sockets (copied on write; read per datagram).
	bound atomic.Pointer[[]netip.Addr]
	// sockets: the data plane's handles on them, by local address (copied on write).
	sockets atomic.Pointer[map[netip.AddrPort]*wire.Socket]
	mu      sync.Mutex // one writer of bound and sockets at a time
}

func newObservingNet(a *arrivals, stamps *latency.Stamps, g *guard, in *ingress) (*observingNet, error) {
	n, err := stdnet.NewNet()
	if err != nil {
		return nil, err
	}
	return &observingNet{Net: n, arrivals: a, stamps: stamps, guard: g, ingress: in}, nil
}

// ListenUDP wraps the socket.
func (n *observingNet) ListenUDP(network string, laddr *net.UDPAddr) (transport.UDPConn, error) {
	c, err := net.ListenUDP(network, laddr)
	if err != nil {
		return nil, err
	}
	local := c.LocalAddr().(*net.UDPAddr).AddrPort().Addr().Unmap()
	sock, err := wire.NewSocket(c)
	if err != nil {
		_ = c.Close()
		return nil, err
	}
	n.mu.Lock()
	bound := append([]netip.Addr{local}, n.boundAddrs()...)
	n.bound.Store(&bound)
	sockets := map[netip.AddrPort]*wire.Socket{}
	if old := n.sockets.Load(); old != nil {
		for k, v := range *old {
			sockets[k] = v
		}
	}
	sockets[netip.AddrPortFrom(local, sock.LocalAddr().Port())] = sock
	n.sockets.Store(&sockets)
	n.mu.Unlock()
	reader, err := wire.NewReader(c, enableRxTimestamps(c))
	if err != nil {
		_ = c.Close()
		return nil, err
	}
	out := wire.NewBatch(ingressBatch)
	out.Held = true // ReadFromAddrPort flushes once the read's datagrams are handled
	conn := &observingConn{UDPConn: c, arrivals: n.arrivals, stamps: n.stamps, guard: n.guard, reader: reader,
		ingress: n.ingress, out: out, sock: sock}
	if local.IsLoopback() {
		conn.siblings = n
	}
	return conn, nil
}

// socket is our socket bound to a (nil: none).
func (n *observingNet) socket(a netip.AddrPort) *wire.Socket {
	if m := n.sockets.Load(); m != nil {
		return (*m)[a]
	}
	return nil
}

func (n *observingNet) boundAddrs() []netip.Addr {
	if b := n.bound.Load(); b != nil {
		return *b
	}
	return nil
}

// errUseSibling refuses a datagram from a loopback socket to an address one of
// our other sockets is bound to.
var errUseSibling = errors.New("from loopback to an address of our own: its socket sends")

// observingConn implements ice.AddrPortReaderWriter, which the UDP mux reads
// through, as well as ReadFrom.
// One goroutine reads each socket (the UDP mux), which owns the reader.
type observingConn struct {
	*net.UDPConn
	arrivals *arrivals
	stamps   *latency.Stamps
	guard    *guard
	// siblings, for a socket on a loopback address: it sends nothing to an
	// address another of our sockets is bound to (a browser on this host). Else,
	// as the controlling agent (subscribe connections), pion may nominate the
	// pair 127.0.0.1 → the browser's LAN address, equal in priority to the pair
	// of the LAN addresses, and Firefox never validates a pair with a loopback
	// address unless media.peerconnection.ice.loopback: its subscribe connection
	// stayed checking. Refused, that pair fails and the other is nominated. With
	// no socket on the LAN address (media on 127.0.0.1 only) loopback serves it.
	siblings *observingNet
	reader   *wire.Reader // batched reads (recvmmsg), with each datagram's arrival stamp
	ingress  *ingress     // SRTCP the data plane takes (nil: none)
	out      *wire.Batch  // the reader's (Held): what ingress took sends, and answers
	sock     *wire.Socket // the data plane's handle on this socket
}

// ingressBatch is what the taken datagrams of one read send (their fan-out,
// retransmissions), sent at the end of each frame and once the read's
// datagrams are handled (a full batch flushes earlier): a frame read whole
// goes to each receiver as one GSO train. Room for a 720p frame's packets to
// a few receivers, or one packet's fan-out to 256.
const ingressBatch = 256

// observe shows datagram b to the latency stamps with the time it left the
// socket (now), and gives the time it reached the host (arrived: the kernel's
// stamp when there is one), when the transport-wide feedback counts it.
func (c *observingConn) observe(b, oob []byte) (now, arrived time.Time) {
	now = time.Now()
	arrived = now
	if t, ok := rxTime(oob); ok {
		arrived = t
	}
	if c.stamps != nil {
		c.stamps.Observe(b, now)
	}
	return now, arrived
}

// ReadFromAddrPort reads the next datagram the guard lets through and the
// data plane does not take (ingress), copied into b. What ingress took may
// have queued datagrams in the reader's batch (its fan-out, answers): they go
// once the read's datagrams are handled, before the reader waits for the
// socket, and before pion gets a datagram.
func (c *observingConn) ReadFromAddrPort(b []byte) (int, netip.AddrPort, error) {
	for {
		if c.reader.Pending() == 0 && c.out.Len() > 0 {
			c.out.Flush()
		}
		p, oob, addr, err := c.reader.Next()
		if err != nil {
			return 0, netip.AddrPort{}, err
		}
		if len(p) == 0 {
			continue
		}
		now, arrived := c.observe(p, oob)
		if c.guard.drop(p) {
			continue
		}
		if c.ingress != nil {
			// A taken packet counts for the feedback once it authenticates
			// (takeRTP), so a forged one never reaches the recorder.
			switch c.ingress.take(p, c.sock, addr.Addr().Unmap().WithZone(""), addr.Port(), now, arrived, c.out) {
			case takenHere:
				continue
			case indicatedToPion:
				p = p[:wire.STUNHeaderLen] // rewritten in place (consent.take)
			}
		}
		// Pion's readers confirm what they authenticate (feedbackRecorder).
		c.arrivals.Observe(p, arrived)
		if c.out.Len() > 0 {
			c.out.Flush()
		}
		return copy(b, p), addr, nil
	}
}

func (c *observingConn) WriteToAddrPort(b []byte, addr netip.AddrPort) (int, error) {
	if c.siblings != nil && c.ownAddress(addr.Addr()) {
		return 0, errUseSibling
	}
	return c.UDPConn.WriteToUDPAddrPort(b, addr)
}

// WriteTo is WriteToAddrPort for writers with a net.Addr.
func (c *observingConn) WriteTo(b []byte, addr net.Addr) (int, error) {
	if u, ok := addr.(*net.UDPAddr); ok && c.siblings != nil && c.ownAddress(u.AddrPort().Addr()) {
		return 0, errUseSibling
	}
	return c.UDPConn.WriteTo(b, addr)
}

// ownAddress: a is not loopback and one of our sockets is bound to it.
func (c *observingConn) ownAddress(a netip.Addr) bool {
	a = a.Unmap()
	if a.IsLoopback() {
		return false
	}
	for _, b := range c.siblings.boundAddrs() {
		if b == a {
			return true
		}
	}
	return false
}

// ReadFrom is ReadFromAddrPort for readers that want a net.Addr.
func (c *observingConn) ReadFrom(b []byte) (int, net.Addr, error) {
	n, addr, err := c.ReadFromAddrPort(b)
	if err != nil && n == 0 {
		return n, nil, err
	}
	return n, net.UDPAddrFromAddrPort(addr), err
}
