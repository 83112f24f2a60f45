package wire

import (
	"net"
	"net/netip"
	"sync/atomic"
	"time"
)

// Socket is one of the SFU's UDP sockets, written to directly by the data plane
// (read by pion's UDP mux).
type Socket struct {
	conn  *net.UDPConn
	sys   rawConn
	noGSO atomic.Bool // the kernel does not segment UDP for it (or its device refused)
}

// NewSocket wraps c for batched sends.
func NewSocket(c *net.UDPConn) (*Socket, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	s := &Socket{conn: c, sys: rc}
	s.noGSO.Store(!probeGSO(rc))
	return s, nil
}

// GSO reports whether the kernel segments trains sent on the socket.
func (s *Socket) GSO() bool { return !s.noGSO.Load() }

// LocalAddr is the address the socket is bound to.
func (s *Socket) LocalAddr() netip.AddrPort {
	return s.conn.LocalAddr().(*net.UDPAddr).AddrPort()
}

// Dest is where a connection's media goes: our socket of its selected ICE pair
// and the peer's address. Immutable; a new pair is a new Dest.
type Dest struct {
	Sock *Socket
	Addr netip.AddrPort
	sa   sockaddr // Addr for the system call
}

// NewDest builds a destination.
func NewDest(s *Socket, addr netip.AddrPort) *Dest {
	d := &Dest{Sock: s, Addr: netip.AddrPortFrom(addr.Addr().Unmap(), addr.Port())}
	d.sa = makeSockaddr(d.Addr)
	return d
}

// Mode says how a connection's RTP is sent.
type Mode uint32

const (
	// Pending: the handshake has not finished; nothing can be protected yet.
	Pending Mode = iota
	// Own: our contexts protect it and Batch sends it on Dest.
	Own
	// Pion: pion's SRTP session sends it (ICE-TCP, keys not exportable, or the
	// own data plane switched off).
	Pion
)

func (m Mode) String() string {
	switch m {
	case Pending:
		return "pending"
	case Own:
		return "own"
	case Pion:
		return "pion"
	}
	return "unknown"
}

// Route is one peer connection as the data plane sees it: its keys, once the
// handshake exported them, and its current destination (the selected ICE
// pair; nil when the pair is not ours to write to, e.g. ICE-TCP). Set by
// pion's callbacks, read per packet without locks.
type Route struct {
	keys atomic.Pointer[Keys]
	dest atomic.Pointer[Dest]
	pion atomic.Bool
	rtt  atomic.Int64 // ns; 0: not measured
}

// SetRTT records the round-trip time our last ICE consent check measured.
func (r *Route) SetRTT(d time.Duration) { r.rtt.Store(int64(max(d, 1))) }

// RTT is the last round-trip time the data plane's consent checks measured
// (false: none yet, e.g. a pair that is not ours).
func (r *Route) RTT() (time.Duration, bool) {
	if r == nil {
		return 0, false
	}
	d := r.rtt.Load()
	return time.Duration(d), d > 0
}

// SetKeys records the exported keys, with the RTP session AEAD the
// connection's sealers share.
func (r *Route) SetKeys(k Keys) {
	k.shareRTPSealing()
	r.keys.Store(&k)
}

// SetDest records the destination of the selected pair (nil: none of ours).
func (r *Route) SetDest(d *Dest) { r.dest.Store(d) }

// UsePion hands the connection's RTP to pion for good (the keys could not be
// exported, or the own data plane is off).
func (r *Route) UsePion() { r.pion.Store(true) }

// Dest is the current destination (nil: none).
func (r *Route) Dest() *Dest { return r.dest.Load() }

// Decide says how a stream starting now should be sent, with the keys when
// Own. A stream keeps the answer for good: an SSRC protected by two contexts
// would repeat its packet indexes.
func (r *Route) Decide() (Mode, *Keys) {
	if r == nil || r.pion.Load() {
		return Pion, nil
	}
	k := r.keys.Load()
	if k == nil {
		return Pending, nil
	}
	if r.dest.Load() == nil {
		return Pion, nil
	}
	return Own, k
}
