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

type batchSys struct {
	msgs []mmsghdr
	iovs []unix.Iovec
	// The run being sent, for write (a method value made once: passing it to
	// RawConn.Write does not allocate).
	start, end, done int
	write            func(fd uintptr) bool
}

func (s *batchSys) init(b *Batch, slots int) {
	s.msgs = make([]mmsghdr, slots)
	s.iovs = make([]unix.Iovec, slots)
	for i := range slots {
		s.iovs[i].Base = &b.buf[i*SlotSize]
		s.msgs[i].hdr.Iov = &s.iovs[i]
		s.msgs[i].hdr.Iovlen = 1
	}
	s.write = func(fd uintptr) bool { s.sendmmsg(fd); return true }
}

// send hands datagrams [start, end) (one socket) to the kernel with sendmmsg
// and reports how many it took and the system calls made.
func (s *batchSys) send(b *Batch, start, end int) (sent, calls int) {
	for i := start; i < end; i++ {
		d := b.dests[i]
		s.iovs[i].SetLen(b.lens[i])
		s.msgs[i].hdr.Name = d.sa.ptr()
		s.msgs[i].hdr.Namelen = d.sa.len
		s.msgs[i].n = 0
	}
	s.start, s.end, s.done = start, end, 0
	calls = 0
	for s.start < s.end {
		before := s.done
		// Write holds the socket open for the call and never waits: the
		// socket is non-blocking, and a full one drops (write returns true).
		if err := b.dests[start].Sock.sys.Write(s.write); err != nil {
			break
		}
		calls++
		if s.done == before { // refused: skip the datagram that failed
			s.start++
		}
	}
	return s.done, calls
}

// sendmmsg is one raw system call: short and non-blocking, so it does not go
// through the scheduler's syscall path (floor measurements: sysmon retaking
// the P on longer calls doubled the cost of small batches).
func (s *batchSys) sendmmsg(fd uintptr) {
	n, _, errno := unix.RawSyscall6(unix.SYS_SENDMMSG, fd,
		uintptr(unsafe.Pointer(&s.msgs[s.start])), uintptr(s.end-s.start), unix.MSG_DONTWAIT, 0, 0)
	if errno != 0 || int(n) <= 0 {
		return
	}
	s.done += int(n)
	s.start += int(n)
}
