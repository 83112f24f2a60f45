package relay

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// Handler receives an accepted datagram on the transport's read goroutine:
// the sender's tag, the kind, the stream id and the body, valid only during
// the call (it is the read buffer). It must not block.
type Handler func(sender uint32, kind Kind, stream uint32, body []byte)

// Stats count the transport's datagrams; read by metrics.
type Stats struct {
	Sent, SentBytes         atomic.Uint64
	Received, ReceivedBytes atomic.Uint64 // accepted
	SendErrors              atomic.Uint64
	Dropped                 [Replayed + 1]atomic.Uint64 // by Drop (Accepted unused)
}

// Transport is the node's relay socket: one UDP socket for every conference.
type Transport struct {
	conn    *net.UDPConn
	ring    *Keyring
	peers   *Peers
	handler atomic.Pointer[Handler]
	probes  atomic.Pointer[Prober] // takes KindProbe datagrams (StartProbes)
	stats   Stats
	bufs    sync.Pool // *[]byte of MaxDatagram, for Send
	// missing carries senders whose key is unknown to whoever fetches keys
	// (Exchange); full: dropped, the next datagram asks again.
	missing chan uint32
	wg      sync.WaitGroup
}

// TransportConfig configures Listen.
type TransportConfig struct {
	// Listen is the UDP address (host:port; port 0 picks one).
	Listen string
	// Lead is how long a new key is announced before use; Grace how long an
	// old key is accepted once a newer one is known.
	Lead, Grace time.Duration
}

// Listen opens the relay socket and starts reading; datagrams are dropped
// until SetHandler.
func Listen(cfg TransportConfig) (*Transport, error) {
	addr, err := net.ResolveUDPAddr("udp", cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("relay: %w", err)
	}
	conn, err := net.ListenUDP("udp", addr)
	if err != nil {
		return nil, fmt.Errorf("relay: %w", err)
	}
	_ = conn.SetReadBuffer(4 << 20)
	_ = conn.SetWriteBuffer(4 << 20)
	t := &Transport{conn: conn, ring: NewKeyring(cfg.Lead), peers: NewPeers(cfg.Grace), missing: make(chan uint32, 16)}
	t.bufs.New = func() any { b := make([]byte, MaxDatagram); return &b }
	t.wg.Add(1)
	go func() { defer t.wg.Done(); t.read() }()
	return t, nil
}

// SetHandler sets what receives accepted datagrams; nil drops them (a
// cascade closing while its peers still send).
func (t *Transport) SetHandler(h Handler) {
	if h == nil {
		t.handler.Store(nil) // a pointer to a nil func would be called
		return
	}
	t.handler.Store(&h)
}

// Addr is the socket's local address.
func (t *Transport) Addr() netip.AddrPort { return t.conn.LocalAddr().(*net.UDPAddr).AddrPort() }

// Keyring is this node's sending keys; Peers the others'.
func (t *Transport) Keyring() *Keyring { return t.ring }
func (t *Transport) Peers() *Peers     { return t.peers }

// Stats are the transport's counters.
func (t *Transport) Stats() *Stats { return &t.stats }

// Missing delivers senders whose keys are unknown (for Exchange).
func (t *Transport) Missing() <-chan uint32 { return t.missing }

// Close closes the socket and waits for the reader.
func (t *Transport) Close() error {
	err := t.conn.Close()
	t.wg.Wait()
	return err
}

// Send seals body for stream and sends it to to. Safe for concurrent use; no
// allocation.
func (t *Transport) Send(now time.Time, to netip.AddrPort, kind Kind, stream uint32, body []byte) error {
	bp := t.bufs.Get().(*[]byte)
	defer t.bufs.Put(bp)
	d, err := t.ring.Seal(now, *bp, kind, stream, body)
	if err != nil {
		return err
	}
	if _, err := t.conn.WriteToUDPAddrPort(d, to); err != nil {
		t.stats.SendErrors.Add(1)
		return err
	}
	t.stats.Sent.Add(1)
	t.stats.SentBytes.Add(uint64(len(d)))
	return nil
}

// SendRaw sends b as it is, for tests that forge and replay datagrams.
func (t *Transport) SendRaw(to netip.AddrPort, b []byte) error {
	_, err := t.conn.WriteToUDPAddrPort(b, to)
	return err
}

func (t *Transport) read() {
	buf := make([]byte, MaxDatagram+1) // one more: a longer datagram is seen as such
	var h Header
	for {
		n, _, err := t.conn.ReadFromUDPAddrPort(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		t.receive(time.Now(), buf[:n], &h)
	}
}

// receive opens one datagram and hands it on; the sender's address is not
// trusted (the key says who sent it).
func (t *Transport) receive(now time.Time, b []byte, h *Header) {
	stream, body, drop := t.peers.Open(now, b, h)
	if drop != Accepted {
		t.stats.Dropped[drop].Add(1)
		if drop == UnknownKey {
			select {
			case t.missing <- h.Sender:
			default:
			}
		}
		return
	}
	t.stats.Received.Add(1)
	t.stats.ReceivedBytes.Add(uint64(len(b)))
	if h.Kind == KindProbe {
		if p := t.probes.Load(); p != nil {
			p.receive(now, h.Sender, body)
		}
		return
	}
	if hp := t.handler.Load(); hp != nil {
		(*hp)(h.Sender, h.Kind, stream, body)
	}
}
