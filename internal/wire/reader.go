package wire

import (
	"net"
	"net/netip"
)

const (
	// ReadSlotSize is the room for one received datagram. Peers send at most an
	// MTU (SRTP, STUN, DTLS records alike); a longer datagram is cut there and
	// dropped (Reader.Truncated), as it could not authenticate anyway.
	ReadSlotSize = 2048
	// ReadOOBSize is the room for one datagram's control messages (the
	// kernel's arrival stamp).
	ReadOOBSize = 64
	// ReadSlots is how many datagrams one read takes at most.
	ReadSlots = 64
)

// Reader reads a UDP socket in batches: one system call (recvmmsg on Linux)
// takes everything queued, up to ReadSlots datagrams, and Next hands them out
// one at a time. One goroutine owns a Reader. On Linux the call is a raw,
// non-blocking one and the wait is Go's netpoller: no pass through the
// scheduler's syscall path per datagram, which wakes the runtime's monitor
// thread each time the process comes back from idle.
type Reader struct {
	conn  *net.UDPConn
	buf   []byte // ReadSlots × ReadSlotSize
	oob   []byte // ReadSlots × ReadOOBSize
	lens  []int
	oobns []int
	froms []netip.AddrPort
	next  int // the next datagram Next returns
	n     int // datagrams in the batch
	sys   readerSys

	// Read by the owner (or after it stopped): system calls made, datagrams
	// read, datagrams cut at ReadSlotSize and dropped.
	Calls, Datagrams, Truncated uint64
}

// NewReader reads c in batches; with oob, each datagram's control messages
// are kept (c must have asked for them, e.g. SO_TIMESTAMPNS).
func NewReader(c *net.UDPConn, oob bool) (*Reader, error) {
	r := &Reader{conn: c, buf: make([]byte, ReadSlots*ReadSlotSize), lens: make([]int, ReadSlots),
		oobns: make([]int, ReadSlots), froms: make([]netip.AddrPort, ReadSlots)}
	if oob {
		r.oob = make([]byte, ReadSlots*ReadOOBSize)
	}
	if err := r.sys.init(r); err != nil {
		return nil, err
	}
	return r, nil
}

// Next returns the next datagram, its control messages and its sender,
// waiting for the socket when every datagram read so far was returned. The
// slices are valid until the next call. An error is the socket's (closed).
func (r *Reader) Next() (b, oob []byte, from netip.AddrPort, err error) {
	for r.next >= r.n {
		r.next, r.n = 0, 0
		if err := r.sys.fill(r); err != nil {
			return nil, nil, netip.AddrPort{}, err
		}
	}
	i := r.next
	r.next++
	off := i * ReadSlotSize
	b = r.buf[off : off+r.lens[i] : off+ReadSlotSize]
	if r.oob != nil {
		o := i * ReadOOBSize
		oob = r.oob[o : o+r.oobns[i]]
	}
	return b, oob, r.froms[i], nil
}

// Pending is how many datagrams were read and not yet returned: 0 means the
// next Next waits for the socket.
func (r *Reader) Pending() int { return r.n - r.next }
