//go:build linux

package wire

import (
	"net/netip"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

type rawConn = syscall.RawConn

// sockaddr is the peer's address in the kernel's form.
type sockaddr struct {
	v4  unix.RawSockaddrInet4
	v6  unix.RawSockaddrInet6
	len uint32
	six bool
}

func makeSockaddr(a netip.AddrPort) sockaddr {
	var s sockaddr
	port := a.Port()
	if a.Addr().Is4() {
		s.v4.Family = unix.AF_INET
		s.v4.Port = port<<8 | port>>8 // network byte order
		s.v4.Addr = a.Addr().As4()
		s.len = unix.SizeofSockaddrInet4
		return s
	}
	s.six = true
	s.v6.Family = unix.AF_INET6
	s.v6.Port = port<<8 | port>>8
	s.v6.Addr = a.Addr().As16()
	s.len = unix.SizeofSockaddrInet6
	return s
}

func (s *sockaddr) ptr() *byte {
	if s.six {
		return (*byte)(unsafe.Pointer(&s.v6))
	}
	return (*byte)(unsafe.Pointer(&s.v4))
}

// mmsghdr is struct mmsghdr (not in x/sys/unix).
type mmsghdr struct {
	hdr unix.Msghdr
	n   uint32
}

const (
	// gsoMaxSegments: the kernel's UDP_MAX_SEGMENTS was 64 before 6.x (128 since).
	gsoMaxSegments = 64
	// gsoMaxBytes keeps a train under IP's 64 KiB datagram limit with headers.
	gsoMaxBytes = 65000
	// callMaxDatagrams bounds one sendmmsg: a raw call cannot be preempted,
	// so a stop of the world (a GC phase) waits for it to return, and on
	// loopback each datagram's delivery runs inside the call (~4 µs each).
	callMaxDatagrams = 64
	// gsoMaxSegment: a longer datagram goes alone. The kernel refuses a train
	// whose segments do not fit the path's MTU whole (EMSGSIZE), where a lone
	// datagram would be fragmented; media packets are about 1,200 bytes.
	gsoMaxSegment = 1400
)

// gsoCtrlLen is one control message carrying UDP_SEGMENT's uint16.
var gsoCtrlLen = unix.CmsgSpace(2)

// batchSys sends a run of datagrams for one socket as messages: each a
// destination's train of datagrams cut alike (UDP GSO), or one datagram.
type batchSys struct {
	msgs []mmsghdr    // per message, in the order of their first datagram
	iovs []unix.Iovec // per datagram, grouped by message
	ctrl []byte       // per message: its UDP_SEGMENT control message
	// Grouping, per message: its datagrams, bytes and segment size, whether a
	// shorter (last) segment closed it, and where its iovecs start (send
	// advances it while placing them: then it is where they end).
	count, bytes, seg, iov []int32
	closed                 []bool
	msgOf                  []int32 // per datagram of the run
	open                   destTable
	// The messages being sent, for write (a method value made once: passing
	// it to RawConn.Write does not allocate).
	start, end, done, taken int
	errno                   unix.Errno
	write                   func(fd uintptr) bool
}

func (s *batchSys) init(b *Batch, slots int) {
	s.msgs = make([]mmsghdr, slots)
	s.iovs = make([]unix.Iovec, slots)
	s.ctrl = make([]byte, slots*gsoCtrlLen)
	s.count, s.bytes = make([]int32, slots), make([]int32, slots)
	s.seg, s.iov = make([]int32, slots), make([]int32, slots)
	s.closed, s.msgOf = make([]bool, slots), make([]int32, slots)
	s.open.init(slots)
	for m := range slots {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&s.ctrl[m*gsoCtrlLen]))
		h.Level, h.Type = unix.SOL_UDP, unix.UDP_SEGMENT
		h.SetLen(unix.CmsgLen(2))
	}
	s.write = func(fd uintptr) bool { s.sendmmsg(fd); return true }
}

// group assigns datagrams [start, end) to messages and reports how many.
// A destination's datagrams join its open train while they keep its segment
// size; a shorter one ends the train, a longer one starts the next, one
// longer than gsoMaxSegment goes alone. Each
// destination's datagrams keep their order: its trains are sent in order.
func (s *batchSys) group(b *Batch, start, end int, gso bool) int {
	msgs := 0
	s.open.reset()
	for i := start; i < end; i++ {
		d, n := b.dests[i], int32(b.lens[i])
		m := int32(-1)
		if gso {
			m = s.open.get(d)
		}
		if m < 0 || s.closed[m] || n > s.seg[m] || s.count[m] == gsoMaxSegments || s.bytes[m]+n > gsoMaxBytes {
			m = int32(msgs)
			msgs++
			s.count[m], s.bytes[m], s.seg[m], s.closed[m] = 0, 0, n, false
			if gso {
				s.open.put(d, m)
			}
		}
		s.count[m]++
		s.bytes[m] += n
		s.closed[m] = n < s.seg[m] || n > gsoMaxSegment
		s.msgOf[i-start] = m
	}
	return msgs
}

// send hands datagrams [start, end) (one socket) to the kernel with sendmmsg
// and reports how many it took, in how many messages, and the system calls made.
func (s *batchSys) send(b *Batch, start, end int) (sent, msgsSent, calls int) {
	sock := b.dests[start].Sock
	msgs := s.group(b, start, end, !sock.noGSO.Load())
	at := int32(0)
	for m := range msgs {
		s.iov[m] = at
		at += s.count[m]
	}
	for i := start; i < end; i++ {
		m := s.msgOf[i-start]
		v := &s.iovs[s.iov[m]]
		s.iov[m]++
		v.Base = &b.buf[i*SlotSize]
		v.SetLen(b.lens[i])
	}
	at = 0
	for i := start; i < end; i++ { // each message's first datagram names it
		m := s.msgOf[i-start]
		if int(m) != int(at) {
			continue
		}
		h := &s.msgs[m].hdr
		h.Iov = &s.iovs[s.iov[m]-s.count[m]]
		h.SetIovlen(int(s.count[m]))
		h.Name = b.dests[i].sa.ptr()
		h.Namelen = b.dests[i].sa.len
		h.Control, h.Controllen = nil, 0
		if s.count[m] > 1 {
			c := s.ctrl[int(m)*gsoCtrlLen:]
			*(*uint16)(unsafe.Pointer(&c[unix.CmsgLen(0)])) = uint16(s.seg[m])
			h.Control = &c[0]
			h.SetControllen(gsoCtrlLen)
		}
		s.msgs[m].n = 0
		at++
	}
	s.start, s.end, s.done, s.taken = 0, msgs, 0, 0
	for s.start < s.end {
		before := s.done
		// Write holds the socket open for the call and never waits: the
		// socket is non-blocking, and a full one drops (write returns true).
		if err := sock.sys.Write(s.write); err != nil {
			break
		}
		calls++
		if s.done == before { // refused: skip the message that failed
			if s.count[s.start] > 1 && (s.errno == unix.EIO || s.errno == unix.EINVAL || s.errno == unix.EMSGSIZE) {
				sock.noGSO.Store(true) // a device or path that cannot take trains: never again
			}
			s.start++
		}
	}
	return s.done, s.taken, calls
}

// sendmmsg is one raw system call for the next messages, up to
// callMaxDatagrams: short and non-blocking, so it does not go through the
// scheduler's syscall path (floor measurements: sysmon retaking the P on
// longer calls doubled the cost of small batches).
func (s *batchSys) sendmmsg(fd uintptr) {
	end, datagrams := s.start, 0
	for end < s.end && (end == s.start || datagrams+int(s.count[end]) <= callMaxDatagrams) {
		datagrams += int(s.count[end])
		end++
	}
	n, _, errno := unix.RawSyscall6(unix.SYS_SENDMMSG, fd,
		uintptr(unsafe.Pointer(&s.msgs[s.start])), uintptr(end-s.start), unix.MSG_DONTWAIT, 0, 0)
	s.errno = errno
	if errno != 0 || int(n) <= 0 {
		return
	}
	for m := s.start; m < s.start+int(n); m++ {
		s.done += int(s.count[m])
	}
	s.start += int(n)
	s.taken += int(n)
}

// probeGSO: the kernel segments UDP for this socket (UDP_SEGMENT, Linux 4.18).
func probeGSO(rc rawConn) bool {
	ok := false
	_ = rc.Control(func(fd uintptr) {
		_, err := unix.GetsockoptInt(int(fd), unix.IPPROTO_UDP, unix.UDP_SEGMENT)
		ok = err == nil
	})
	return ok
}

// destTable maps a destination to its open train during one grouping: open
// addressing on the pointer, cleared by generation rather than by writes.
type destTable struct {
	keys []*Dest
	vals []int32
	gens []uint32
	gen  uint32
	mask uintptr
}

func (t *destTable) init(slots int) {
	n := 1
	for n < 2*slots {
		n <<= 1
	}
	t.keys, t.vals, t.gens, t.mask = make([]*Dest, n), make([]int32, n), make([]uint32, n), uintptr(n-1)
}

func (t *destTable) reset() {
	t.gen++
	if t.gen == 0 { // wrapped: old generations could match again
		clear(t.gens)
		t.gen = 1
	}
}

func (t *destTable) slot(d *Dest) uintptr {
	return (uintptr(unsafe.Pointer(d)) >> 4 * 0x9E3779B1) & t.mask
}

func (t *destTable) get(d *Dest) int32 {
	for i := t.slot(d); t.gens[i] == t.gen; i = (i + 1) & t.mask {
		if t.keys[i] == d {
			return t.vals[i]
		}
	}
	return -1
}

func (t *destTable) put(d *Dest, m int32) {
	i := t.slot(d)
	for t.gens[i] == t.gen && t.keys[i] != d {
		i = (i + 1) & t.mask
	}
	t.keys[i], t.vals[i], t.gens[i] = d, m, t.gen
}
