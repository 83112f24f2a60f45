package wire

import (
	"bytes"
	"net"
	"net/netip"
	"testing"
	"time"
)

func listen(tb testing.TB) *net.UDPConn {
	tb.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

func socket(tb testing.TB) *Socket {
	tb.Helper()
	s, err := NewSocket(listen(tb))
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func addrOf(c *net.UDPConn) netip.AddrPort { return c.LocalAddr().(*net.UDPAddr).AddrPort() }

func readAll(tb testing.TB, c *net.UDPConn, n int) [][]byte {
	tb.Helper()
	var got [][]byte
	buf := make([]byte, 2000)
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	for len(got) < n {
		k, _, err := c.ReadFromUDPAddrPort(buf)
		if err != nil {
			tb.Fatalf("read %d of %d datagrams: %v", len(got), n, err)
		}
		got = append(got, append([]byte(nil), buf[:k]...))
	}
	return got
}

// Datagrams for two receivers from two sockets arrive whole, in order, each
// at its own receiver and from the socket it was queued on.
func TestBatchSendsEachDatagramToItsDestination(t *testing.T) {
	a, b := socket(t), socket(t)
	r1, r2 := listen(t), listen(t)
	d1, d2 := NewDest(a, addrOf(r1)), NewDest(b, addrOf(r2))
	var c Counters
	batch := NewBatch(4)
	batch.Stats = &c
	var want1, want2 [][]byte
	for i := range 10 { // more than one batch: the caller flushes when full
		p := bytes.Repeat([]byte{byte(i)}, 100+i*100)
		d := d1
		if i%3 == 0 {
			d = d2
			want2 = append(want2, p)
		} else {
			want1 = append(want1, p)
		}
		if batch.Free() == 0 {
			batch.Flush()
		}
		s := batch.Slot()
		batch.Commit(len(append(s, p...)), d)
	}
	batch.Flush()
	if batch.Len() != 0 {
		t.Fatalf("%d datagrams left after Flush", batch.Len())
	}
	for i, g := range readAll(t, r1, len(want1)) {
		if !bytes.Equal(g, want1[i]) {
			t.Fatalf("receiver 1 datagram %d: %d bytes, want %d", i, len(g), len(want1[i]))
		}
	}
	for i, g := range readAll(t, r2, len(want2)) {
		if !bytes.Equal(g, want2[i]) {
			t.Fatalf("receiver 2 datagram %d: %d bytes, want %d", i, len(g), len(want2[i]))
		}
	}
	if c.Datagrams.Load() != 10 || c.Dropped.Load() != 0 {
		t.Fatalf("counters: %d sent, %d dropped; want 10, 0", c.Datagrams.Load(), c.Dropped.Load())
	}
	if c.Calls.Load() >= 10 {
		t.Fatalf("%d system calls for 10 datagrams: not batched", c.Calls.Load())
	}
}

func TestBatchFullRefusesMore(t *testing.T) {
	b := NewBatch(2)
	d := NewDest(socket(t), addrOf(listen(t)))
	for range 2 {
		s := b.Slot()
		b.Commit(len(append(s, 1, 2, 3)), d)
	}
	if b.Free() != 0 || b.Slot() != nil {
		t.Fatal("a full batch offers a slot")
	}
	b.Commit(3, d)
	if b.Len() != 2 {
		t.Fatalf("a full batch took a third datagram: %d", b.Len())
	}
	if n := b.Flush(); n != 2 {
		t.Fatalf("flushed %d, want 2", n)
	}
}

// A closed socket refuses; nothing panics and the batch is empty afterwards.
func TestBatchOnClosedSocket(t *testing.T) {
	c := listen(t)
	s, _ := NewSocket(c)
	d := NewDest(s, addrOf(listen(t)))
	_ = c.Close()
	b := NewBatch(4)
	if n := b.Send([]byte("x"), d); n != 0 {
		t.Fatalf("sent %d on a closed socket", n)
	}
	if b.Len() != 0 {
		t.Fatal("batch not emptied")
	}
}

func TestBatchSendDoesNotAllocate(t *testing.T) {
	r := listen(t)
	d := NewDest(socket(t), addrOf(r))
	b := NewBatch(8)
	p := make([]byte, 1200)
	go func() { // drain
		buf := make([]byte, 2000)
		for {
			if _, _, err := r.ReadFromUDPAddrPort(buf); err != nil {
				return
			}
		}
	}()
	allocs := testing.AllocsPerRun(200, func() {
		for range 8 {
			s := b.Slot()
			b.Commit(len(append(s, p...)), d)
		}
		b.Flush()
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per batch", allocs)
	}
}

type departures struct {
	seqs []uint16
	at   []time.Time
}

func (d *departures) Departed(seq uint16, at time.Time) {
	d.seqs = append(d.seqs, seq)
	d.at = append(d.at, at)
}

// Stamped datagrams are told, after the flush, when it handed them over; the
// others are not, and a second flush tells nothing again.
func TestBatchStampsDepartures(t *testing.T) {
	r := listen(t)
	d := NewDest(socket(t), addrOf(r))
	batch := NewBatch(4)
	var got departures
	for i := range 3 {
		batch.Commit(len(append(batch.Slot(), byte(i))), d)
		if i != 1 {
			batch.Stamp(&got, uint16(100+i))
		}
	}
	before := time.Now()
	batch.Flush()
	readAll(t, r, 3)
	if len(got.seqs) != 2 || got.seqs[0] != 100 || got.seqs[1] != 102 {
		t.Fatalf("departures %v, want 100 and 102", got.seqs)
	}
	if got.at[0].Before(before) || got.at[0].After(time.Now()) {
		t.Errorf("departed at %v, not during the flush", got.at[0])
	}
	batch.Flush()
	if len(got.seqs) != 2 {
		t.Errorf("an empty flush told %d departures", len(got.seqs)-2)
	}
}
