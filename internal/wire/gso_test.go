package wire

import (
	"bytes"
	"math/rand/v2"
	"net"
	"testing"
)

// queue copies p into b for d, flushing first when b is full.
func queue(b *Batch, p []byte, d *Dest) {
	if b.Free() == 0 {
		b.Flush()
	}
	b.Commit(len(append(b.Slot(), p...)), d)
}

// packet is a datagram that names its receiver and place: checkable whole.
func packet(size, receiver, n int) []byte {
	p := bytes.Repeat([]byte{byte(receiver), byte(n)}, size/2+1)[:size]
	p[0], p[1] = byte(receiver), byte(n)
	return p
}

// A frame's packets fanned out to three receivers, in fan-out order (packet 1
// to each receiver, then packet 2, ...): each receiver gets its packets whole
// and in order, as one train per receiver where the kernel segments.
func TestBatchSendsEachReceiversFrameAsOneTrain(t *testing.T) {
	sock := socket(t)
	var recv [3]struct {
		d    *Dest
		want [][]byte
	}
	conns := make([]*net.UDPConn, 3)
	for i := range recv {
		c := listen(t)
		conns[i] = c
		recv[i].d = NewDest(sock, addrOf(c))
	}
	var c Counters
	b := NewBatch(64)
	b.Stats = &c
	for n, size := range []int{1200, 1200, 1200, 700} { // how a frame is cut
		for i := range recv {
			p := packet(size, i, n)
			recv[i].want = append(recv[i].want, p)
			queue(b, p, recv[i].d)
		}
	}
	b.Flush()
	for i := range recv {
		for j, g := range readAll(t, conns[i], 4) {
			if !bytes.Equal(g, recv[i].want[j]) {
				t.Fatalf("receiver %d datagram %d: %d bytes % x…, want %d bytes % x…", i, j, len(g), g[:2], len(recv[i].want[j]), recv[i].want[j][:2])
			}
		}
	}
	wantMsgs := uint64(3) // one train per receiver
	if sock.noGSO.Load() {
		wantMsgs = 12
		t.Log("this kernel does not segment UDP: one datagram per message")
	}
	if c.Datagrams.Load() != 12 || c.Messages.Load() != wantMsgs || c.Calls.Load() != 1 {
		t.Fatalf("%d datagrams in %d messages, %d calls; want 12 in %d, 1 call",
			c.Datagrams.Load(), c.Messages.Load(), c.Calls.Load(), wantMsgs)
	}
}

// Whatever the sizes and interleaving, every receiver gets exactly its
// datagrams in the order they were queued: trains never reorder a receiver's
// packets, a longer packet starts a new train, and trains stay within the
// kernel's segment and size limits.
func TestBatchTrainsKeepEachReceiversOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	sock := socket(t)
	const receivers = 4
	var dests [receivers]*Dest
	conns := make([]*net.UDPConn, receivers)
	for i := range receivers {
		c := listen(t)
		conns[i] = c
		dests[i] = NewDest(sock, addrOf(c))
	}
	for round := range 30 {
		var want [receivers][][]byte
		b := NewBatch(1 + rng.IntN(150))
		var c Counters
		b.Stats = &c
		total := 0
		for n := 0; n < 100; {
			i := rng.IntN(receivers)
			run := 1 + rng.IntN(80) // up to more than a train's 64 segments
			size := []int{1200, 1400, 100, 1 + rng.IntN(1400)}[rng.IntN(4)]
			for k := 0; k < run && n < 100; k++ {
				s := size
				if rng.IntN(5) == 0 {
					s = 1 + rng.IntN(1400) // a last (or any) packet of another size
				}
				p := packet(max(s, 2), i, len(want[i]))
				want[i] = append(want[i], p)
				queue(b, p, dests[i])
				n++
				total++
			}
		}
		b.Flush()
		for i := range receivers {
			for j, g := range readAll(t, conns[i], len(want[i])) {
				if !bytes.Equal(g, want[i][j]) {
					t.Fatalf("round %d receiver %d datagram %d: %d bytes % x…, want %d bytes % x…",
						round, i, j, len(g), g[:2], len(want[i][j]), want[i][j][:2])
				}
			}
		}
		if c.Datagrams.Load() != uint64(total) || c.Dropped.Load() != 0 {
			t.Fatalf("round %d: %d of %d datagrams sent, %d dropped", round, c.Datagrams.Load(), total, c.Dropped.Load())
		}
	}
}

// A socket whose device cannot segment sends one datagram per message.
func TestBatchWithoutGSOSendsDatagramsAlone(t *testing.T) {
	sock := socket(t)
	sock.noGSO.Store(true)
	r := listen(t)
	d := NewDest(sock, addrOf(r))
	var c Counters
	b := NewBatch(8)
	b.Stats = &c
	for n := range 5 {
		queue(b, packet(1200, 0, n), d)
	}
	b.Flush()
	for j, g := range readAll(t, r, 5) {
		if g[1] != byte(j) || len(g) != 1200 {
			t.Fatalf("datagram %d: % x… %d bytes", j, g[:2], len(g))
		}
	}
	if c.Datagrams.Load() != 5 || c.Messages.Load() != 5 {
		t.Fatalf("%d datagrams in %d messages; want 5 in 5", c.Datagrams.Load(), c.Messages.Load())
	}
}

// Datagrams too long to be sure of the path's MTU go alone, where the kernel
// would fragment them, not in a train it would refuse whole.
func TestBatchSendsLongDatagramsAlone(t *testing.T) {
	sock := socket(t)
	r := listen(t)
	d := NewDest(sock, addrOf(r))
	var c Counters
	b := NewBatch(8)
	b.Stats = &c
	sizes := []int{1450, 1450, 1450, 1200, 1200}
	for n, size := range sizes {
		queue(b, packet(size, 0, n), d)
	}
	b.Flush()
	for j, g := range readAll(t, r, len(sizes)) {
		if g[1] != byte(j) || len(g) != sizes[j] {
			t.Fatalf("datagram %d: % x… %d bytes, want %d", j, g[:2], len(g), sizes[j])
		}
	}
	want := uint64(4) // three alone, then a train of two
	if !sock.GSO() {
		want = 5
	}
	if c.Messages.Load() != want {
		t.Fatalf("%d messages, want %d", c.Messages.Load(), want)
	}
}

// One system call takes at most callMaxDatagrams: a raw call cannot be
// preempted, and a stop of the world waits for it.
func TestBatchBoundsTheDatagramsOfOneCall(t *testing.T) {
	sock := socket(t)
	r := listen(t)
	d := NewDest(sock, addrOf(r))
	var c Counters
	b := NewBatch(2*callMaxDatagrams + 2)
	b.Stats = &c
	for n := range 2*callMaxDatagrams + 2 {
		queue(b, packet(100, 0, n), d) // one train of 130 would be cut at 64 segments
	}
	b.Flush()
	readAll(t, r, 2*callMaxDatagrams+2)
	if c.Datagrams.Load() != 2*callMaxDatagrams+2 || c.Calls.Load() != 3 {
		t.Fatalf("%d datagrams in %d calls; want %d in 3", c.Datagrams.Load(), c.Calls.Load(), 2*callMaxDatagrams+2)
	}
}
