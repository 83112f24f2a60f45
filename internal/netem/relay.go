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
	Listen string // address:port clients send to
	Target string // address:port everything from the clients goes to
	// Up shapes clients → target, Down target → clients: one link each way
	// that all clients share, as the flows of one host share its access link.
	Up, Down Config
	// Seed seeds both directions' generators (Down's with Seed+1).
	Seed int64
	// Allow, when valid, is the only prefix clients may send from; datagrams
	// from elsewhere are dropped and counted (Refused).
	Allow netip.Prefix
}

// RelayStats count a relay's traffic so far.
type RelayStats struct {
	Up, Down Stats
	Clients  int // client addresses seen
	Refused  int // datagrams from outside Allow or beyond MaxClients
}

// MaxClients bounds the client addresses a relay serves at once.
const MaxClients = 64

// Relay is a UDP relay in the manner of a NAT: each client address (within
// Allow) gets its own socket towards Target, so the target tells clients
// apart (a browser's peer connections use a port each); datagrams from
// clients cross the Up link, the target's answers the Down link. A reader
// goroutine per socket runs the link model; a writer per direction sends each
// datagram at its arrival time.
type Relay struct {
	listen *net.UDPConn
	target *net.UDPAddr
	origin time.Time
	up     *direction
	down   *direction
	done   chan struct{}
	wg     sync.WaitGroup

	mu       sync.Mutex
	sessions map[netip.AddrPort]*net.UDPConn // client → its socket towards Target
	refused  int
	allow    netip.Prefix
}

// StartRelay opens the relay's socket and starts it; Close stops it.
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
	setBuffers(listen)
	r := &Relay{listen: listen, target: taddr, origin: time.Now(), done: make(chan struct{}),
		sessions: map[netip.AddrPort]*net.UDPConn{}, allow: cfg.Allow}
	r.up = newDirection(cfg.Up, rand.New(rand.NewSource(cfg.Seed)))
	r.down = newDirection(cfg.Down, rand.New(rand.NewSource(cfg.Seed+1)))
	r.wg.Add(3)
	go r.readClients()
	go r.deliver(r.up, func(a arrival) { _, _ = a.conn.Write((*a.buf)[:a.n]) })
	go r.deliver(r.down, func(a arrival) { _, _ = r.listen.WriteToUDPAddrPort((*a.buf)[:a.n], a.to) })
	return r, nil
}

func setBuffers(c *net.UDPConn) {
	_ = c.SetReadBuffer(4 << 20)
	_ = c.SetWriteBuffer(4 << 20)
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
	st := RelayStats{Clients: len(r.sessions), Refused: r.refused}
	r.mu.Unlock()
	st.Up, st.Down = r.up.stats(), r.down.stats()
	return st
}

// Close stops the relay and waits for its goroutines; datagrams still on
// their way are dropped.
func (r *Relay) Close() error {
	r.mu.Lock()
	close(r.done)
	errs := []error{r.listen.Close()}
	for _, c := range r.sessions {
		errs = append(errs, c.Close())
	}
	r.mu.Unlock()
	r.wg.Wait()
	return errors.Join(errs...)
}

func (r *Relay) now() time.Duration { return time.Since(r.origin) }

func (r *Relay) readClients() {
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
		if conn := r.session(from); conn != nil {
			r.up.send(r.now(), rb[:n], arrival{conn: conn})
		}
	}
}

// session returns the client's socket towards the target, opening it for a
// new client; nil if the client is refused.
func (r *Relay) session(client netip.AddrPort) *net.UDPConn {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.sessions[client]; ok {
		return c
	}
	if r.allow.IsValid() && !r.allow.Contains(client.Addr()) || len(r.sessions) >= MaxClients || r.closed() {
		r.refused++
		return nil
	}
	c, err := net.DialUDP("udp", nil, r.target)
	if err != nil {
		r.refused++
		return nil
	}
	setBuffers(c)
	r.sessions[client] = c
	r.wg.Add(1)
	go r.readTarget(c, client)
	return c
}

// readTarget relays what the target sends on conn back to client.
func (r *Relay) readTarget(conn *net.UDPConn, client netip.AddrPort) {
	defer r.wg.Done()
	rb := make([]byte, maxDatagram)
	for {
		n, err := conn.Read(rb)
		if err != nil {
			if r.closed() {
				return
			}
			continue // e.g. ECONNREFUSED while the target is not up yet
		}
		r.down.send(r.now(), rb[:n], arrival{to: client})
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
func (r *Relay) deliver(d *direction, write func(arrival)) {
	defer r.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		a, wait := d.due(r.now())
		if a.buf != nil {
			write(a)
			putBuf(a.buf)
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
// drops it, queues a copy for delivery to a's destination.
func (d *direction) send(now time.Duration, p []byte, a arrival) {
	d.mu.Lock()
	at, ok := d.link.Send(now, len(p)+udpIPv4Overhead)
	if ok {
		d.seq++
		a.at, a.seq, a.buf = at, d.seq, getBuf(len(p))
		a.n = copy(*a.buf, p)
		heap.Push(&d.pending, a)
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
func (d *direction) due(now time.Duration) (arrival, time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.pending) == 0 {
		return arrival{}, 0
	}
	if next := d.pending[0]; next.at > now {
		return arrival{}, next.at - now
	}
	return heap.Pop(&d.pending).(arrival), 0
}

// arrival is a datagram on its way: when it arrives, and where it goes (conn
// towards the target, or to a client).
type arrival struct {
	at   time.Duration
	seq  uint64 // ties keep the order sent
	buf  *[]byte
	n    int
	conn *net.UDPConn
	to   netip.AddrPort
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
