//go:build linux

package bench

import (
	"crypto/cipher"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// floorForwarder is the floor's minimal forwarder: one goroutine on one UDP
// socket, doing what any SFU must per packet and nothing else, with the best
// batching that adds no delay:
//
//   - ingress: wait on Go's netpoller, then recvmmsg everything queued (up to
//     floorBatch datagrams per call);
//   - AES-128-GCM open of each ingress packet (the publisher's key);
//   - for each destination of the stream: a fresh RTP header with a
//     transport-wide sequence number extension, AES-128-GCM seal (the
//     destination's key) into a send buffer;
//   - one frame's packets to one destination leave as one UDP GSO datagram
//     train; all trains and single packets of an ingress batch leave in one
//     sendmmsg, issued as a raw system call (a short non-blocking call, so
//     the runtime need not hand the P off: see the floor facts).
//
// Nothing is allocated per packet. Its counters are atomics, read by the
// child's command loop.
type floorForwarder struct {
	conn *net.UDPConn
	rc   syscall.RawConn
	fd   int

	in      cipher.AEAD
	streams [][]int32 // by SSRC-1: destination indexes
	dests   []floorDest

	// ingress
	rbuf  [][]byte
	riov  []unix.Iovec
	rmsgs []mmsghdr
	// egress
	obuf  []byte
	off   int
	omsgs []mmsghdr
	oiov  []unix.Iovec
	octl  [][]byte
	nmsg  int
	nonce [12]byte

	floorCounters
}

type floorDest struct {
	sa    unix.RawSockaddrInet4
	aead  cipher.AEAD
	twSeq uint16
}

// mmsghdr is struct mmsghdr (linux).
type mmsghdr struct {
	hdr unix.Msghdr
	n   uint32
	_   [4]byte
}

const (
	floorBatch   = 64   // ingress datagrams per recvmmsg
	floorMaxMsgs = 1024 // egress messages per sendmmsg
	floorOutBuf  = 4 << 20
	floorMaxGSO  = 64 // segments per GSO train
	// floorMaxTrain is the most bytes of one GSO train: a UDP datagram's
	// payload limit, which the kernel applies to the whole train.
	floorMaxTrain = 65507
	rtpHeaderLen  = 12
	twExtLen      = 8 // one-byte header extension: BEDE, length 1, id/len, 2-byte sequence, padding
	gcmTagLen     = 16
	floorMTU      = 1500
)

// FloorConfig is what the parent tells the forwarder child: its keys and routes.
type FloorConfig struct {
	Key     []byte      `json:"key"`     // AES-128 key of the ingress
	Streams [][]int32   `json:"streams"` // by SSRC-1: destination indexes
	Dests   []FloorDest `json:"dests"`
}

// FloorDest is one receiver: its address and key.
type FloorDest struct {
	Addr string `json:"addr"`
	Key  []byte `json:"key"`
}

func newFloorForwarder(cfg FloorConfig) (*floorForwarder, error) {
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, err
	}
	f := &floorForwarder{conn: conn, streams: cfg.Streams}
	if f.in, err = newGCM(cfg.Key); err != nil {
		conn.Close()
		return nil, err
	}
	for _, d := range cfg.Dests {
		ap, err := netip.ParseAddrPort(d.Addr)
		if err != nil || !ap.Addr().Is4() {
			conn.Close()
			return nil, fmt.Errorf("floor: destination %q: want an IPv4 address and port", d.Addr)
		}
		fd := floorDest{sa: unix.RawSockaddrInet4{Family: unix.AF_INET, Addr: ap.Addr().As4()}}
		binary.BigEndian.PutUint16((*[2]byte)(unsafe.Pointer(&fd.sa.Port))[:], ap.Port())
		if fd.aead, err = newGCM(d.Key); err != nil {
			conn.Close()
			return nil, err
		}
		f.dests = append(f.dests, fd)
	}
	for _, s := range f.streams {
		for _, d := range s {
			if d < 0 || int(d) >= len(f.dests) {
				conn.Close()
				return nil, fmt.Errorf("floor: destination %d of %d", d, len(f.dests))
			}
		}
	}
	if f.rc, err = conn.SyscallConn(); err != nil {
		conn.Close()
		return nil, err
	}
	_ = f.rc.Control(func(fd uintptr) {
		f.fd = int(fd)
		// Large socket buffers (forced: we are root in the benchmark's box,
		// and ignored otherwise): a burst must not be dropped by the kernel.
		_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, 8<<20)
		_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 8<<20)
	})
	f.rbuf = make([][]byte, floorBatch)
	f.riov = make([]unix.Iovec, floorBatch)
	f.rmsgs = make([]mmsghdr, floorBatch)
	for i := range f.rbuf {
		f.rbuf[i] = make([]byte, floorMTU)
		f.riov[i].Base = &f.rbuf[i][0]
		f.riov[i].SetLen(floorMTU)
		f.rmsgs[i].hdr.Iov = &f.riov[i]
		f.rmsgs[i].hdr.SetIovlen(1)
	}
	f.obuf = make([]byte, floorOutBuf)
	f.omsgs = make([]mmsghdr, floorMaxMsgs)
	f.oiov = make([]unix.Iovec, floorMaxMsgs)
	f.octl = make([][]byte, floorMaxMsgs)
	for i := range f.octl {
		f.octl[i] = make([]byte, unix.CmsgSpace(2))
	}
	return f, nil
}

// Addr is the forwarder's ingress address.
func (f *floorForwarder) Addr() string { return f.conn.LocalAddr().String() }

// Close stops run.
func (f *floorForwarder) Close() error { return f.conn.Close() }

// run forwards until the socket is closed.
func (f *floorForwarder) run() {
	var n int
	read := func(fd uintptr) bool {
		for i := range f.rmsgs[:floorBatch] {
			f.rmsgs[i].n = 0
		}
		r, _, errno := unix.RawSyscall6(unix.SYS_RECVMMSG, fd, uintptr(unsafe.Pointer(&f.rmsgs[0])), floorBatch, unix.MSG_DONTWAIT, 0, 0)
		if errno == unix.EAGAIN || errno == unix.EINTR {
			return false // wait for the netpoller
		}
		if errno != 0 {
			n = -1
			return true
		}
		n = int(r)
		return true
	}
	for {
		if err := f.rc.Read(read); err != nil {
			return // closed
		}
		if n < 0 {
			continue
		}
		f.wakeups.Add(1)
		f.forward(n)
	}
}

// forward handles the n datagrams recvmmsg read.
func (f *floorForwarder) forward(n int) {
	var sent, bytes uint64
	nonce := &f.nonce // a field: a local would escape through the AEAD interface
	// Runs of packets of one frame (same SSRC and timestamp) go to each
	// destination as one GSO train.
	for i := 0; i < n; {
		pkt := f.rbuf[i][:f.rmsgs[i].n]
		if !f.open(pkt, nonce) {
			f.badPackets.Add(1)
			i++
			continue
		}
		ssrc, ts := binary.BigEndian.Uint32(pkt[8:]), binary.BigEndian.Uint32(pkt[4:])
		j := i + 1
		for j < n && j-i < floorMaxGSO {
			q := f.rbuf[j][:f.rmsgs[j].n]
			if len(q) < rtpHeaderLen+gcmTagLen || binary.BigEndian.Uint32(q[8:]) != ssrc || binary.BigEndian.Uint32(q[4:]) != ts {
				break
			}
			if !f.open(q, nonce) {
				break // counted as bad when it starts its own run
			}
			j++
		}
		dests := f.streams[ssrc-1]
		for _, di := range dests {
			d := &f.dests[di]
			seg, start, count := 0, 0, 0
			for k := i; k < j; k++ {
				p := f.rbuf[k][:f.rmsgs[k].n]
				payload := p[rtpHeaderLen : len(p)-gcmTagLen]
				size := rtpHeaderLen + twExtLen + len(payload) + gcmTagLen
				// A train is equal segments and a last one no larger; a new
				// train starts when this packet would break that, or when the
				// buffer or the message table is full.
				if count > 0 && (size > seg || f.off-start+size > floorMaxTrain || f.off+size > len(f.obuf) || f.nmsg == floorMaxMsgs-1) {
					f.endMsg(d, start, seg, count)
					count = 0
				}
				if f.off+size > len(f.obuf) || f.nmsg == floorMaxMsgs {
					f.flush()
				}
				if count == 0 {
					start, seg = f.off, size
				}
				out := f.obuf[f.off : f.off+rtpHeaderLen+twExtLen]
				copy(out, p[:rtpHeaderLen])
				out[0] |= 0x10 // X: a header extension follows
				out[12], out[13], out[14], out[15] = 0xbe, 0xde, 0, 1
				out[16] = 1<<4 | 1
				binary.BigEndian.PutUint16(out[17:], d.twSeq)
				out[19] = 0
				d.twSeq++
				copy(nonce[:], p[4:12]) // timestamp, SSRC
				copy(nonce[8:], p[2:4]) // sequence number
				nonce[10], nonce[11] = 0, 0
				d.aead.Seal(out, nonce[:], payload, out)
				f.off += size
				count++
				sent++
				bytes += uint64(rtpHeaderLen + len(payload))
				if size < seg { // a smaller segment ends the train
					f.endMsg(d, start, seg, count)
					start, count = f.off, 0
				}
			}
			if count > 0 {
				f.endMsg(d, start, seg, count)
			}
		}
		i = j
	}
	f.flush()
	f.forwarded.Add(sent)
	f.bytes.Add(bytes)
}

// open authenticates and decrypts an ingress packet in place.
func (f *floorForwarder) open(p []byte, nonce *[12]byte) bool {
	if len(p) < rtpHeaderLen+gcmTagLen {
		return false
	}
	ssrc := binary.BigEndian.Uint32(p[8:])
	if ssrc == 0 || int(ssrc) > len(f.streams) {
		return false
	}
	copy(nonce[:], p[4:12])
	copy(nonce[8:], p[2:4])
	nonce[10], nonce[11] = 0, 0
	_, err := f.in.Open(p[rtpHeaderLen:rtpHeaderLen], nonce[:], p[rtpHeaderLen:], p[:rtpHeaderLen])
	return err == nil
}

// endMsg makes obuf[start:f.off] one message to d: count segments of seg bytes
// (the last may be shorter) as one GSO train, or a plain datagram.
func (f *floorForwarder) endMsg(d *floorDest, start, seg, count int) {
	m := &f.omsgs[f.nmsg]
	iov := &f.oiov[f.nmsg]
	iov.Base = &f.obuf[start]
	iov.SetLen(f.off - start)
	m.hdr = unix.Msghdr{Name: (*byte)(unsafe.Pointer(&d.sa)), Namelen: unix.SizeofSockaddrInet4, Iov: iov}
	m.hdr.SetIovlen(1)
	if count > 1 {
		ctl := f.octl[f.nmsg]
		h := (*unix.Cmsghdr)(unsafe.Pointer(&ctl[0]))
		h.Level, h.Type = unix.SOL_UDP, unix.UDP_SEGMENT
		h.SetLen(unix.CmsgLen(2))
		binary.NativeEndian.PutUint16(ctl[unix.CmsgLen(0):], uint16(seg))
		m.hdr.Control = &ctl[0]
		m.hdr.SetControllen(len(ctl))
	}
	f.nmsg++
	f.messages.Add(1)
	f.datagrams.Add(uint64(count))
}

// flush sends the queued messages with sendmmsg; what the socket refuses
// (its buffer full, or a message it cannot send) is counted as dropped.
func (f *floorForwarder) flush() {
	for done := 0; done < f.nmsg; {
		r, _, errno := unix.RawSyscall6(unix.SYS_SENDMMSG, uintptr(f.fd), uintptr(unsafe.Pointer(&f.omsgs[done])), uintptr(f.nmsg-done), 0, 0, 0)
		f.sendCalls.Add(1)
		if errno == unix.EINTR {
			continue
		}
		if errno == unix.EAGAIN || errno == unix.ENOBUFS || (errno == 0 && r == 0) {
			f.dropped.Add(uint64(f.nmsg - done)) // the socket is full: what is left is lost
			break
		}
		if errno != 0 { // this message was refused: skip it, send the rest
			f.dropped.Add(1)
			done++
			continue
		}
		done += int(r)
	}
	f.nmsg, f.off = 0, 0
}
