//go:build linux

package wire

import (
	"encoding/binary"
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

// probeGSO reports whether the kernel knows UDP_SEGMENT on the socket
// (Linux 4.18 on). A kernel that knows it may still refuse a train (a device
// without checksum offload): send then falls back for good.
func probeGSO(rc rawConn) bool {
	ok := false
	_ = rc.Control(func(fd uintptr) {
		_, err := unix.GetsockoptInt(int(fd), unix.SOL_UDP, unix.UDP_SEGMENT)
		ok = err == nil
	})
	return ok
}

const (
	// maxSegments is the most datagrams of one train (the kernel's
	// UDP_MAX_SEGMENTS on older kernels; newer ones allow 128).
	maxSegments = 64
	// maxTrain is the most bytes of one train: a UDP datagram's payload
	// limit, which the kernel applies to the whole train.
	maxTrain = 65507
)

// mmsghdr is struct mmsghdr (not in x/sys/unix).
type mmsghdr struct {
	hdr unix.Msghdr
	n   uint32
}

type batchSys struct {
	msgs []mmsghdr
	iovs []unix.Iovec // by position in the run being sent
	ctl  []byte       // one UDP_SEGMENT control message per message
	segs []int        // datagrams in each message
	at   []int        // each message's first position in the run
	// The messages being sent, for write (a method value made once: passing
	// it to RawConn.Write does not allocate).
	start, end int
	errno      unix.Errno
	write      func(fd uintptr) bool
	// queued's answer, and the function made once for RawConn.Control.
	inq  int32
	ioct func(fd uintptr)
}

var ctlSize = unix.CmsgSpace(2)

func (s *batchSys) init(b *Batch, slots int) {
	s.msgs = make([]mmsghdr, slots)
	s.iovs = make([]unix.Iovec, slots)
	s.ctl = make([]byte, slots*ctlSize)
	s.segs = make([]int, slots)
	s.at = make([]int, slots)
	for m := range slots {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&s.ctl[m*ctlSize]))
		h.Level, h.Type = unix.SOL_UDP, unix.UDP_SEGMENT
		h.SetLen(unix.CmsgLen(2))
	}
	s.write = func(fd uintptr) bool { s.sendmmsg(fd); return true }
	s.ioct = func(fd uintptr) {
		if _, _, errno := unix.RawSyscall(unix.SYS_IOCTL, fd, unix.SIOCINQ, uintptr(unsafe.Pointer(&s.inq))); errno != 0 {
			s.inq = 0
		}
	}
}

// queued reports whether a datagram waits in s's receive queue (SIOCINQ: the
// size of the first one, 0 when none).
func (s *batchSys) queued(sock *Socket) bool {
	s.inq = 0
	if sock.sys.Control(s.ioct) != nil {
		return false
	}
	return s.inq > 0
}

// send hands the datagrams of run (slot indexes, all on one socket, each
// destination's together) to the kernel with sendmmsg and reports how many it
// took, the system calls made and the GSO trains among the messages sent.
func (s *batchSys) send(b *Batch, run []int32) (sent, calls, trains int) {
	sock := b.dests[run[0]].Sock
	gso := sock.gso.Load()
	s.start, s.end = 0, s.build(b, run, 0, gso)
	for s.start < s.end {
		before := s.start
		// Write holds the socket open for the call and never waits: the
		// socket is non-blocking (write returns true whatever happened).
		if err := sock.sys.Write(s.write); err != nil {
			break
		}
		calls++
		for m := before; m < s.start; m++ {
			sent += s.segs[m]
			if s.segs[m] > 1 {
				trains++
			}
		}
		if s.errno == 0 {
			continue
		}
		switch {
		case gso && s.segs[s.start] > 1 && (s.errno == unix.EIO || s.errno == unix.EINVAL):
			// The kernel or the device cannot segment: plain datagrams
			// from now on, starting again with this message's.
			sock.gso.Store(false)
			gso = false
			s.start, s.end = 0, s.build(b, run, s.at[s.start], false)
		case s.errno == unix.EAGAIN || s.errno == unix.ENOBUFS:
			return sent, calls, trains // the socket is full: what is left is lost
		default:
			s.start++ // this message was refused: skip it, send the rest
		}
	}
	return sent, calls, trains
}

// build makes the messages for run[from:] and returns how many: with gso,
// each run of one destination's datagrams of one size (and one shorter last)
// is one message, a GSO train of segments of the first one's size.
func (s *batchSys) build(b *Batch, run []int32, from int, gso bool) int {
	m := 0
	for i := from; i < len(run); m++ {
		d, seg := b.dests[run[i]], b.lens[run[i]]
		j, total := i+1, seg
		for gso && j < len(run) && j-i < maxSegments && b.dests[run[j]] == d {
			l := b.lens[run[j]]
			if l > seg || total+l > maxTrain {
				break
			}
			total += l
			j++
			if l < seg {
				break // a shorter segment ends the train
			}
		}
		for k := i; k < j; k++ {
			s.iovs[k].Base = &b.buf[int(run[k])*SlotSize]
			s.iovs[k].SetLen(b.lens[run[k]])
		}
		h := &s.msgs[m].hdr
		h.Name, h.Namelen = d.sa.ptr(), d.sa.len
		h.Iov = &s.iovs[i]
		h.SetIovlen(j - i)
		h.Control = nil
		h.SetControllen(0)
		if j-i > 1 {
			c := s.ctl[m*ctlSize : (m+1)*ctlSize]
			binary.NativeEndian.PutUint16(c[unix.CmsgLen(0):], uint16(seg))
			h.Control = &c[0]
			h.SetControllen(ctlSize)
		}
		s.msgs[m].n = 0
		s.segs[m], s.at[m] = j-i, i
		i = j
	}
	return m
}

// sendmmsg is one raw system call: short and non-blocking, so it does not go
// through the scheduler's syscall path (floor measurements: sysmon retaking
// the P on longer calls doubled the cost of small batches). It sends from
// message start on and advances start past what the kernel took; errno is
// the error of the first message it could not send (0: none).
func (s *batchSys) sendmmsg(fd uintptr) {
	n, _, errno := unix.RawSyscall6(unix.SYS_SENDMMSG, fd,
		uintptr(unsafe.Pointer(&s.msgs[s.start])), uintptr(s.end-s.start), unix.MSG_DONTWAIT, 0, 0)
	s.errno = errno
	if errno != 0 {
		return
	}
	if int(n) <= 0 {
		s.errno = unix.EAGAIN
		return
	}
	s.start += int(n)
}
