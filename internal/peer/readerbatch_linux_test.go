//go:build linux

package peer

import (
	"errors"
	"net"
	"os"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/podium-sfu/podium/internal/wire"
)

// The socket's reader holds what the data plane's handlers queued for the
// datagrams of one read (recvmmsg) and sends it in one system call once they
// are handled, or before pion gets a datagram of its own.
func TestReaderSendsItsBatchWhenTheSocketRunsDry(t *testing.T) {
	peer, recv := listenLoopback(t), listenLoopback(t)
	in, c, _, _ := publishIngress(t, peer.LocalAddr().(*net.UDPAddr).AddrPort())
	sfu := observedLoopback(t, in.arrivals, in)
	sock, err := wire.NewSocket(sfu.UDPConn)
	if err != nil {
		t.Fatal(err)
	}
	dest := wire.NewDest(sock, recv.LocalAddr().(*net.UDPAddr).AddrPort())
	c.rtp.Take(takenSSRC, func(_ time.Time, p []byte, out *wire.Batch) { // a fan-out to one receiver, left to the reader
		out.Commit(len(append(out.Slot(), p...)), dest)
	})
	var sent wire.Counters
	sfu.out.Stats = &sent
	pub := peerOutbound(t, ingressKeys())
	to := sfu.LocalAddr().(*net.UDPAddr).AddrPort()
	send := func(b []byte) { // and wait until the kernel queued it
		before := queuedBytes(t, sfu.UDPConn)
		if _, err := peer.WriteToUDPAddrPort(b, to); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(5 * time.Second); queuedBytes(t, sfu.UDPConn) <= before; {
			if time.Now().After(deadline) {
				t.Fatal("the datagram never reached the socket")
			}
			time.Sleep(time.Millisecond)
		}
	}
	buf := make([]byte, 1500)
	var recvd uint64
	expect := func(datagrams, calls uint64) {
		t.Helper()
		if sent.Datagrams.Load() != datagrams || sent.Calls.Load() != calls {
			t.Fatalf("%d datagrams sent in %d system calls, want %d in %d", sent.Datagrams.Load(), sent.Calls.Load(), datagrams, calls)
		}
		_ = recv.SetReadDeadline(time.Now().Add(5 * time.Second))
		for range datagrams - recvd {
			if _, _, err := recv.ReadFromUDPAddrPort(buf); err != nil {
				t.Fatal(err)
			}
			recvd++
		}
	}
	// Three taken packets queued, then one for pion: the three leave in one
	// call, before pion has its datagram.
	for i := range 3 {
		send(srtpPacket(t, pub, takenSSRC, uint16(10+i), uint16(10+i)))
	}
	send(srtpPacket(t, pub, otherSSRC, 1, 13))
	_ = sfu.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, _, err := sfu.ReadFromAddrPort(buf); err != nil {
		t.Fatal(err)
	}
	expect(3, 1)
	// Two more and nothing after them: they leave, in one call, before the
	// reader waits.
	send(srtpPacket(t, pub, takenSSRC, 13, 14))
	send(srtpPacket(t, pub, takenSSRC, 14, 15))
	_ = sfu.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if _, _, err := sfu.ReadFromAddrPort(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read %v, want the deadline: nothing for pion was sent", err)
	}
	expect(5, 2)
}

// queuedBytes is what c's receive queue holds (SO_MEMINFO's receive
// allocation: it grows with every datagram queued).
func queuedBytes(t *testing.T, c *net.UDPConn) uint32 {
	t.Helper()
	var info [unix.SK_MEMINFO_VARS]uint32
	rc, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var errno unix.Errno
	_ = rc.Control(func(fd uintptr) {
		size := uint32(unsafe.Sizeof(info))
		_, _, errno = unix.Syscall6(unix.SYS_GETSOCKOPT, fd, unix.SOL_SOCKET, unix.SO_MEMINFO,
			uintptr(unsafe.Pointer(&info[0])), uintptr(unsafe.Pointer(&size)), 0)
	})
	if errno != 0 {
		t.Fatal(errno)
	}
	return info[unix.SK_MEMINFO_RMEM_ALLOC]
}
