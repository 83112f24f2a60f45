package netem

import (
	"container/heap"
	"errors"
	"fmt"
	"math/rand"
	"net"
	"net/netip"
	"sync"
	"time"
)

// udpIPv4Overhead is added to each datagram's payload when a link counts
// bytes: the IPv4 and UDP headers, which a real bottleneck carries too.
const udpIPv4Overhead = 28

const maxDatagram = 65535

// RelayConfig describes a relay: where it listens, where it relays to, and the
// path emulated in each direction.
type RelayConfig struct {
	Listen string // address:port the client sends to
	Target string // address:port everything from the client goes to
	// Up shapes client → target, Down target → client.
	Up, Down Config
	// Seed seeds both directions' generators (Down's with Seed+1).
	Seed int64
	// Allow, when valid, is the only prefix clients may send from; datagrams
	// from elsewhere are dropped and counted (Refused). Without it any
	// sender becomes the client.
	Allow netip.Prefix
}

// RelayStats count a relay's traffic so far.
type RelayStats struct {
	Up, Down Stats
	Refused  int // datagrams from outside Allow
}

// Relay is a UDP relay with one client: datagrams reaching Listen go to Target
// through the Up link, datagrams from Target go to the client through the Down
// link. The client is the latest address a datagram came from (within Allow),
// so it may move, as a NAT binding does. Two goroutines per direction: one
// reads and runs the link model, one writes each datagram at its arrival time.
type Relay struct {
	listen, upstream *net.UDPConn
	origin           time.Time
	up, down         *direction
	done             chan struct{}
	wg               sync.WaitGroup

	mu      sync.Mutex
	client  netip.AddrPort // zero until the first datagram
	refused int
	allow   netip.Prefix
}

// StartRelay opens the relay's sockets and starts it; Close stops it.
func StartRelay(cfg RelayConfig) (*Relay, error) {
	for name, c := range map[string]Config{"up": cfg.Up, "down": cfg.Down} {
		if err := c.Validate(); err != nil {
			return nil, fmt.Errorf("netem: %s link: %w", name, err)
		}
	}
	laddr, err := net.ResolveUDPAddr("udp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("netem: listen address: %w", err)
	}
	taddr, err := net.ResolveUDPAddr("udp", cfg.Target)
	if err != nil {
		return nil, fmt.Errorf("netem: target address: %w", err)
	}
	listen, err := net.ListenUDP("udp", laddr)
	if err != nil {
		return nil, fmt.Errorf("netem: %w", err)
	}
	upstream, err := net.DialUDP("udp", nil, taddr)
	if err != nil {
		_ = listen.Close()
		return nil, fmt.Errorf("netem: %w", err)
	}
	for _, c := range []*net.UDPConn{listen, upstream} {
		_ = c.SetReadBuffer(4 << 20)
		_ = c.SetWriteBuffer(4 << 20)
	}
	r := &Relay{listen: listen, upstream: upstream, origin: time.Now(), done: make(chan struct{}), allow: cfg.Allow}
	r.up = newDirection(cfg.Up, rand.New(rand.NewSource(cfg.Seed)))
	r.down = newDirection(cfg.Down, rand.New(rand.NewSource(cfg.Seed+1)))
	r.wg.Add(4)
	go r.readClient()
	go r.readTarget()
	go r.deliver(r.up, func(b []byte) { _, _ = r.upstream.Write(b) })
	go r.deliver(r.down, func(b []byte) {
		r.mu.Lock()
		to := r.client
		r.mu.Unlock()
		_, _ = r.listen.WriteToUDPAddrPort(b, to)
	})
	return r, nil
}

// Addr is the address clients send to.
func (r *Relay) Addr() *net.UDPAddr { return r.listen.LocalAddr().(*net.UDPAddr) }

// SetLinks changes both directions' settings from now on (see Link.SetConfig).
func (r *Relay) SetLinks(up, down Config) error {
	if err := errors.Join(up.Validate(), down.Validate()); err != nil {
		return fmt.Errorf("netem: %w", err)
	}
	r.up.setConfig(up)
	r.down.setConfig(down)
	return nil
}

// Stats are the counts so far.
func (r *Relay) Stats() RelayStats {
	r.mu.Lock()
	refused := r.refused
	r.mu.Unlock()
	return RelayStats{Up: r.up.stats(), Down: r.down.stats(), Refused: refused}
}

// Close stops the relay and waits for its goroutines; datagrams still on
// their way are dropped.
func (r *Relay) Close() error {
	close(r.done)
	err := errors.Join(r.listen.Close(), r.upstream.Close())
	r.wg.Wait()
	return err
}

func (r *Relay) now() time.Duration { return time.Since(r.origin) }

func (r *Relay) readClient() {
	defer r.wg.Done()
	rb := make([]byte, maxDatagram)
	for {
		n, from, err := r.listen.ReadFromUDPAddrPort(rb)
		if err != nil {
			if r.closed() {
				return
			}
			continue
		}
		from = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
		r.mu.Lock()
		ok := !r.allow.IsValid() || r.allow.Contains(from.Addr())
		if ok {
			r.client = from
		} else {
			r.refused++
		}
		r.mu.Unlock()
		if ok {
			r.up.send(r.now(), rb[:n])
		}
	}
}

func (r *Relay) readTarget() {
	defer r.wg.Done()
	rb := make([]byte, maxDatagram)
	for {
		n, err := r.upstream.Read(rb)
		if err != nil {
			if r.closed() {
				return
			}
			continue // e.g. ECONNREFUSED while the target is not up yet
		}
		r.mu.Lock()
		known := r.client.IsValid()
		r.mu.Unlock()
		if known {
			r.down.send(r.now(), rb[:n])
		}
	}
}

func (r *Relay) closed() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// deliver writes each of d's datagrams when its arrival time comes.
func (r *Relay) deliver(d *direction, write func([]byte)) {
	defer r.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		b, n, wait := d.due(r.now())
		if b != nil {
			write((*b)[:n])
			putBuf(b)
			continue
		}
		if wait > 0 {
			timer.Reset(wait)
		}
		select {
		case <-r.done:
			return
		case <-d.wake:
		case <-timer.C:
		}
		if wait > 0 && !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
}

// direction is one link and the datagrams on their way through it.
type direction struct {
	wake chan struct{} // a datagram was queued

	mu      sync.Mutex
	link    *Link
	pending arrivals
	seq     uint64
}

func newDirection(cfg Config, rng *rand.Rand) *direction {
	return &direction{wake: make(chan struct{}, 1), link: New(cfg, rng)}
}

func (d *direction) setConfig(cfg Config) {
	d.mu.Lock()
	d.link.SetConfig(cfg)
	d.mu.Unlock()
}

func (d *direction) stats() Stats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.link.Stats()
}

// send runs datagram p through the link model at now and, unless the link
// drops it, queues a copy for delivery.
func (d *direction) send(now time.Duration, p []byte) {
	d.mu.Lock()
	at, ok := d.link.Send(now, len(p)+udpIPv4Overhead)
	if ok {
		d.seq++
		b := getBuf(len(p))
		heap.Push(&d.pending, arrival{at: at, seq: d.seq, buf: b, n: copy(*b, p)})
	}
	d.mu.Unlock()
	if !ok {
		return
	}
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// due pops the next datagram if it has arrived by now; otherwise it returns
// how long until the next one does (0: none is queued).
func (d *direction) due(now time.Duration) (*[]byte, int, time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.pending) == 0 {
		return nil, 0, 0
	}
	if next := d.pending[0]; next.at > now {
		return nil, 0, next.at - now
	}
	a := heap.Pop(&d.pending).(arrival)
	return a.buf, a.n, 0
}

type arrival struct {
	at  time.Duration
	seq uint64 // ties keep the order sent
	buf *[]byte
	n   int
}

// arrivals is a min-heap by arrival time (container/heap).
type arrivals []arrival

func (h arrivals) Len() int { return len(h) }
func (h arrivals) Less(i, j int) bool {
	return h[i].at < h[j].at || h[i].at == h[j].at && h[i].seq < h[j].seq
}
func (h arrivals) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *arrivals) Push(x any)   { *h = append(*h, x.(arrival)) }
func (h *arrivals) Pop() any {
	old := *h
	a := old[len(old)-1]
	*h = old[:len(old)-1]
	return a
}

// Datagrams on their way are copied into recycled buffers of pooledSize
// (media packets stay under an MTU); a larger one gets a buffer of its own.
const pooledSize = 2048

var bufs = sync.Pool{New: func() any { b := make([]byte, pooledSize); return &b }}

func getBuf(n int) *[]byte {
	if n > pooledSize {
		b := make([]byte, n)
		return &b
	}
	return bufs.Get().(*[]byte)
}

func putBuf(b *[]byte) {
	if cap(*b) == pooledSize {
		*b = (*b)[:pooledSize]
		bufs.Put(b)
	}
}
