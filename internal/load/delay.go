package load

import (
	"net"
	"sync"
	"time"

	"github.com/pion/transport/v4"
	"github.com/pion/transport/v4/stdnet"
)

// delayNet is the network as a participant far from its bridge sees it: every
// datagram its ICE sockets send, and every one they receive, waits delay (one
// way). The kernel here has no netem; this is the client↔bridge half of the
// WAN emulation (podium bench wan). A constant delay keeps the order.
type delayNet struct {
	*stdnet.Net
	delay time.Duration
}

func newDelayNet(delay time.Duration) (*delayNet, error) {
	n, err := stdnet.NewNet()
	if err != nil {
		return nil, err
	}
	return &delayNet{Net: n, delay: delay}, nil
}

// ListenUDP is where ICE opens its host candidates' sockets.
func (n *delayNet) ListenUDP(network string, laddr *net.UDPAddr) (transport.UDPConn, error) {
	c, err := n.Net.ListenUDP(network, laddr)
	if err != nil {
		return nil, err
	}
	return newDelayConn(c, n.delay), nil
}

type datagram struct {
	b    []byte
	addr net.Addr
	at   time.Time
	err  error
}

// delayConn delays ReadFrom and WriteTo (what ICE uses) by a constant: a
// goroutine reads the socket into in, another writes out from out, each
// datagram released at its time. Allocates per datagram: a test tool.
type delayConn struct {
	transport.UDPConn
	delay   time.Duration
	in, out chan datagram
	done    chan struct{}
	once    sync.Once
	wg      sync.WaitGroup
}

func newDelayConn(c transport.UDPConn, delay time.Duration) *delayConn {
	d := &delayConn{UDPConn: c, delay: delay, in: make(chan datagram, 4096), out: make(chan datagram, 4096), done: make(chan struct{})}
	d.wg.Add(2)
	go d.readLoop()
	go d.writeLoop()
	return d
}

func (d *delayConn) readLoop() {
	defer d.wg.Done()
	for {
		b := make([]byte, 1600)
		n, addr, err := d.UDPConn.ReadFrom(b)
		select {
		case d.in <- datagram{b: b[:n], addr: addr, at: time.Now().Add(d.delay), err: err}:
		case <-d.done:
			return
		}
		if err != nil {
			return
		}
	}
}

func (d *delayConn) writeLoop() {
	defer d.wg.Done()
	for {
		select {
		case g := <-d.out:
			time.Sleep(time.Until(g.at))
			_, _ = d.UDPConn.WriteTo(g.b, g.addr)
		case <-d.done:
			return
		}
	}
}

// ReadFrom returns the next datagram once its delay has passed.
func (d *delayConn) ReadFrom(p []byte) (int, net.Addr, error) {
	select {
	case g := <-d.in:
		if g.err != nil {
			return 0, g.addr, g.err
		}
		time.Sleep(time.Until(g.at))
		return copy(p, g.b), g.addr, nil
	case <-d.done:
		return 0, nil, net.ErrClosed
	}
}

// WriteTo queues the datagram to leave after the delay (dropped when the
// queue is full, as a congested link would).
func (d *delayConn) WriteTo(p []byte, addr net.Addr) (int, error) {
	select {
	case d.out <- datagram{b: append([]byte(nil), p...), addr: addr, at: time.Now().Add(d.delay)}:
	default:
	}
	return len(p), nil
}

func (d *delayConn) Close() error {
	err := d.UDPConn.Close()
	d.once.Do(func() { close(d.done) })
	d.wg.Wait()
	return err
}
