//go:build linux

package wire

import (
	"bytes"
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// gsoSocket is a socket the kernel takes GSO trains on (else the test skips:
// kernels before 4.18).
func gsoSocket(t *testing.T) *Socket {
	t.Helper()
	s := socket(t)
	if !s.gso.Load() {
		t.Skip("the kernel has no UDP_SEGMENT")
	}
	return s
}

// packet is datagram i of size n, its bytes telling it apart.
func packet(i, n int) []byte {
	p := bytes.Repeat([]byte{byte(i)}, n)
	p[0], p[n-1] = byte(i>>8), byte(n)
	return p
}

func queue(b *Batch, p []byte, d *Dest) {
	if b.Free() == 0 {
		b.Flush()
	}
	b.Commit(len(append(b.Slot(), p...)), d)
}

// expectExactly reads want from c in order, then checks that nothing more comes.
func expectExactly(t *testing.T, c *net.UDPConn, want [][]byte) {
	t.Helper()
	for i, g := range readAll(t, c, len(want)) {
		if !bytes.Equal(g, want[i]) {
			t.Fatalf("%v: datagram %d: %d bytes %x…, want %d bytes %x…", addrOf(c), i, len(g), g[:2], len(want[i]), want[i][:2])
		}
	}
	_ = c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	buf := make([]byte, 2000)
	if n, _, err := c.ReadFromUDPAddrPort(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("%v: an extra datagram of %d bytes (err %v)", addrOf(c), n, err)
	}
}

// N equal packets to one destination leave as one train in one system call,
// and the receiver gets exactly those N datagrams, in order.
func TestFlushSendsEqualPacketsToOneDestinationAsOneTrain(t *testing.T) {
	r := listen(t)
	d := NewDest(gsoSocket(t), addrOf(r))
	var c Counters
	b := NewBatch(32)
	b.Stats = &c
	var want [][]byte
	for i := range 20 {
		p := packet(i, 1100)
		want = append(want, p)
		queue(b, p, d)
	}
	if n := b.Flush(); n != 20 {
		t.Fatalf("Flush took %d of 20", n)
	}
	if c.Trains.Load() != 1 || c.Calls.Load() != 1 || c.Datagrams.Load() != 20 {
		t.Fatalf("%d trains, %d calls, %d datagrams; want 1, 1, 20", c.Trains.Load(), c.Calls.Load(), c.Datagrams.Load())
	}
	expectExactly(t, r, want)
}

// A fan-out interleaves destinations (each packet to every receiver in turn)
// on two sockets, with near-equal packet sizes as senders cut frames: each
// receiver gets its packets in order, and each destination's runs of one size
// (and one shorter last) become trains.
func TestFlushGroupsAFanOutByDestination(t *testing.T) {
	a, s2 := gsoSocket(t), gsoSocket(t)
	r1, r2, r3 := listen(t), listen(t), listen(t)
	dests := []*Dest{NewDest(a, addrOf(r1)), NewDest(s2, addrOf(r2)), NewDest(a, addrOf(r3))}
	sizes := []int{1101, 1101, 1100, 1100, 1100, 300, 1200, 80} // a frame, then a larger packet, then a small one
	var c Counters
	b := NewBatch(64)
	b.Stats = &c
	want := make([][][]byte, len(dests))
	for i, n := range sizes {
		for k, d := range dests {
			p := packet(i*4+k, n)
			want[k] = append(want[k], p)
			queue(b, p, d)
		}
	}
	if n := b.Flush(); n != len(sizes)*len(dests) {
		t.Fatalf("Flush took %d of %d", n, len(sizes)*len(dests))
	}
	// Per destination: [1101 1101 1100] [1100 1100 300] [1200 80].
	if c.Trains.Load() != 9 || c.Calls.Load() != 2 {
		t.Fatalf("%d trains in %d calls; want 9 trains, one call per socket", c.Trains.Load(), c.Calls.Load())
	}
	for k, r := range []*net.UDPConn{r1, r2, r3} {
		expectExactly(t, r, want[k])
	}
}

// A socket whose kernel refuses trains (here: SO_NO_CHECK, with which UDP GSO
// fails with EINVAL) falls back to plain datagrams for good, losing nothing.
func TestFlushFallsBackWhenTheKernelRefusesTrains(t *testing.T) {
	s := gsoSocket(t)
	if err := s.sys.Control(func(fd uintptr) {
		_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_NO_CHECK, 1)
	}); err != nil {
		t.Fatal(err)
	}
	r := listen(t)
	d := NewDest(s, addrOf(r))
	var c Counters
	b := NewBatch(16)
	b.Stats = &c
	var want [][]byte
	for round := range 2 {
		for i := range 6 {
			p := packet(round*10+i, 1000)
			want = append(want, p)
			queue(b, p, d)
		}
		if n := b.Flush(); n != 6 {
			t.Fatalf("round %d: Flush took %d of 6", round, n)
		}
	}
	if s.gso.Load() {
		t.Fatal("the socket still sends trains after the kernel refused one")
	}
	if c.Trains.Load() != 0 || c.Dropped.Load() != 0 || c.Calls.Load() != 3 {
		t.Fatalf("%d trains, %d dropped, %d calls; want 0, 0, 3 (the refused train, then one call a flush)",
			c.Trains.Load(), c.Dropped.Load(), c.Calls.Load())
	}
	expectExactly(t, r, want)
}

// A held batch stays queued while a datagram waits on the reader's socket,
// and its latency samples wait for the system call.
func TestFlushIdleWaitsForTheSocketToRunDry(t *testing.T) {
	in := listen(t)
	sock, err := NewSocket(in)
	if err != nil {
		t.Fatal(err)
	}
	r := listen(t)
	d := NewDest(sock, addrOf(r))
	b := NewBatch(8)
	b.Hold = true
	queue(b, packet(1, 100), d)
	var rec recorder
	b.Sample(&rec, 3, time.Time{}, time.Time{})
	if _, err := listen(t).WriteToUDPAddrPort([]byte("next"), addrOf(in)); err != nil {
		t.Fatal(err)
	}
	waitQueued(t, sock)
	if n := b.FlushIdle(sock); n != 0 || b.Len() != 1 || rec.n != 0 {
		t.Fatalf("flushed %d (%d left, %d sampled) with a datagram waiting", n, b.Len(), rec.n)
	}
	readAll(t, in, 1)
	if n := b.FlushIdle(sock); n != 1 || b.Len() != 0 {
		t.Fatalf("flushed %d (%d left) with nothing waiting", n, b.Len())
	}
	if rec.n != 3 {
		t.Fatalf("%d destinations sampled after the flush, want 3", rec.n)
	}
	readAll(t, r, 1)
}

type recorder struct{ n int }

func (r *recorder) Sample(n int, _, _ time.Time) { r.n += n }

// waitQueued waits until a datagram waits on s (asking the kernel itself).
func waitQueued(t *testing.T, s *Socket) {
	t.Helper()
	queued := func() bool {
		n := 0
		_ = s.sys.Control(func(fd uintptr) { n, _ = unix.IoctlGetInt(int(fd), unix.SIOCINQ) })
		return n > 0
	}
	for deadline := time.Now().Add(5 * time.Second); !queued(); {
		if time.Now().After(deadline) {
			t.Fatal("the datagram never reached the socket")
		}
		time.Sleep(time.Millisecond)
	}
}

// A fan-out flushed as trains, FlushIdle's check included, allocates nothing.
func TestGSOFlushDoesNotAllocate(t *testing.T) {
	s := gsoSocket(t)
	var dests []*Dest
	for range 3 {
		r := listen(t)
		dests = append(dests, NewDest(s, addrOf(r)))
		go func() { // drain
			buf := make([]byte, 2000)
			for {
				if _, _, err := r.ReadFromUDPAddrPort(buf); err != nil {
					return
				}
			}
		}()
	}
	var c Counters
	b := NewBatch(16)
	b.Stats = &c
	b.Hold = true
	p := make([]byte, 1200)
	var rec recorder
	allocs := testing.AllocsPerRun(200, func() {
		for range 4 {
			for _, d := range dests {
				b.Commit(len(append(b.Slot(), p...)), d)
			}
		}
		b.Sample(&rec, 3, time.Time{}, time.Time{})
		b.FlushIdle(s)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per batch", allocs)
	}
	if c.Trains.Load() == 0 || b.Len() != 0 {
		t.Fatalf("%d trains, %d left: the GSO flush did not run", c.Trains.Load(), b.Len())
	}
}
