//go:build linux

package wire

import (
	"encoding/binary"
	"net/netip"
	"os"
	"strconv"
	"unsafe"

	"golang.org/x/sys/unix"
)

// readerSys reads with recvmmsg.
type readerSys struct {
	raw   rawConn
	msgs  []mmsghdr
	iovs  []unix.Iovec
	names []unix.RawSockaddrInet6 // room for either family
	got   int                     // datagrams the last call read
	errno unix.Errno
	read  func(fd uintptr) bool // a method value made once: passing it does not allocate
}

func (s *readerSys) init(r *Reader) error {
	raw, err := r.conn.SyscallConn()
	if err != nil {
		return err
	}
	s.raw = raw
	s.msgs = make([]mmsghdr, ReadSlots)
	s.iovs = make([]unix.Iovec, ReadSlots)
	s.names = make([]unix.RawSockaddrInet6, ReadSlots)
	for i := range ReadSlots {
		s.iovs[i].Base = &r.buf[i*ReadSlotSize]
		s.iovs[i].SetLen(ReadSlotSize)
		h := &s.msgs[i].hdr
		h.Iov = &s.iovs[i]
		h.Iovlen = 1
		h.Name = (*byte)(unsafe.Pointer(&s.names[i]))
		if r.oob != nil {
			h.Control = &r.oob[i*ReadOOBSize]
		}
	}
	s.read = s.recvmmsg
	return nil
}

// fill reads the next batch, waiting on the netpoller while nothing is queued.
func (s *readerSys) fill(r *Reader) error {
	for i := range s.msgs {
		h := &s.msgs[i].hdr
		h.Namelen = unix.SizeofSockaddrInet6
		if r.oob != nil {
			h.SetControllen(ReadOOBSize)
		}
		h.Flags = 0
		s.msgs[i].n = 0
	}
	s.got, s.errno = 0, 0
	if err := s.raw.Read(s.read); err != nil {
		return err
	}
	r.Calls++
	switch s.errno {
	case 0:
	case unix.ECONNREFUSED, unix.EHOSTUNREACH, unix.ENETUNREACH:
		return nil // a pending socket error (an ICMP report): read on
	default:
		return os.NewSyscallError("recvmmsg", s.errno)
	}
	for i := range s.got {
		h := &s.msgs[i].hdr
		if h.Flags&unix.MSG_TRUNC != 0 {
			r.Truncated++
			continue
		}
		r.lens[r.n] = int(s.msgs[i].n)
		r.oobns[r.n] = int(h.Controllen)
		r.froms[r.n] = fromSockaddr(&s.names[i], h.Namelen)
		if r.n != i { // a truncated one before: close the gap
			copy(r.buf[r.n*ReadSlotSize:], r.buf[i*ReadSlotSize:i*ReadSlotSize+r.lens[r.n]])
			if r.oob != nil {
				copy(r.oob[r.n*ReadOOBSize:], r.oob[i*ReadOOBSize:(i+1)*ReadOOBSize])
			}
		}
		r.n++
	}
	r.Datagrams += uint64(r.n)
	return nil
}

// recvmmsg is one raw, non-blocking system call; false (EAGAIN) makes
// RawConn.Read wait for the socket to be readable and call it again.
func (s *readerSys) recvmmsg(fd uintptr) bool {
	for {
		n, _, errno := unix.RawSyscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&s.msgs[0])),
			uintptr(len(s.msgs)), unix.MSG_DONTWAIT, 0, 0)
		switch errno {
		case 0:
			s.got = int(n)
			return true
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return false
		default:
			s.errno = errno
			return true
		}
	}
}

// fromSockaddr reads the sender's address the kernel wrote.
func fromSockaddr(sa *unix.RawSockaddrInet6, n uint32) netip.AddrPort {
	b := (*[unix.SizeofSockaddrInet6]byte)(unsafe.Pointer(sa))
	port := binary.BigEndian.Uint16(b[2:4])
	switch {
	case sa.Family == unix.AF_INET && n >= unix.SizeofSockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[4:8])), port)
	case sa.Family == unix.AF_INET6 && n >= unix.SizeofSockaddrInet6:
		a := netip.AddrFrom16(sa.Addr)
		if sa.Scope_id != 0 { // a link-local peer: the zone says which link
			a = a.WithZone(strconv.FormatUint(uint64(sa.Scope_id), 10))
		}
		return netip.AddrPortFrom(a, port)
	}
	return netip.AddrPort{}
}
