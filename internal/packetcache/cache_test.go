package packetcache

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func ms(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }

// pkt returns a recognisable packet for seq.
func pkt(seq uint16, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(int(seq) + i)
	}
	return b
}

func newCache(t testing.TB, capacity, slotSize int) *Cache {
	t.Helper()
	c, err := New(capacity, slotSize)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustStore(t testing.TB, c *Cache, seq uint16, p []byte, now time.Time) {
	t.Helper()
	if err := c.Store(seq, p, now); err != nil {
		t.Fatalf("Store(%d): %v", seq, err)
	}
}

// wantPacket checks that seq is cached with the content pkt(seq, n).
func wantPacket(t testing.TB, c *Cache, seq uint16, n int, sentAt time.Time) {
	t.Helper()
	dst := make([]byte, c.SlotSize())
	got, at, ok := c.Get(seq, dst)
	if !ok {
		t.Fatalf("Get(%d) not found", seq)
	}
	if !bytes.Equal(dst[:got], pkt(seq, n)) || !at.Equal(sentAt) {
		t.Fatalf("Get(%d) = % x at %v, want % x at %v", seq, dst[:got], at, pkt(seq, n), sentAt)
	}
}

func wantMissing(t testing.TB, c *Cache, seq uint16) {
	t.Helper()
	if n, _, ok := c.Get(seq, make([]byte, c.SlotSize())); ok {
		t.Fatalf("Get(%d) found %d bytes, want missing", seq, n)
	}
}

func TestNew(t *testing.T) {
	for _, tt := range []struct{ capacity, size int }{{0, 1500}, {-4, 1500}, {3, 1500}, {100, 1500}, {MaxCapacity * 2, 1}, {8, 0}} {
		if _, err := New(tt.capacity, tt.size); !errors.Is(err, ErrBadConfig) {
			t.Errorf("New(%d, %d) err = %v, want ErrBadConfig", tt.capacity, tt.size, err)
		}
	}
	c := newCache(t, 1, DefaultSlotSize)
	if c.Capacity() != 1 || c.SlotSize() != DefaultSlotSize {
		t.Fatalf("capacity %d slot %d", c.Capacity(), c.SlotSize())
	}
}

func TestEmpty(t *testing.T) {
	c := newCache(t, 8, 16)
	wantMissing(t, c, 0)
	if c.MarkResent(0, t0) {
		t.Fatal("MarkResent on empty cache")
	}
}

func TestWraparound(t *testing.T) {
	c := newCache(t, 16, 32)
	seq := uint16(65530)
	for i := range 12 {
		mustStore(t, c, seq, pkt(seq, 10+i), ms(i))
		seq++
	}
	seq = 65530
	for i := range 12 {
		wantPacket(t, c, seq, 10+i, ms(i))
		seq++
	}
	wantMissing(t, c, 6)     // not yet sent
	wantMissing(t, c, 65529) // before the first packet
}

func TestEviction(t *testing.T) {
	c := newCache(t, 8, 16)
	for s := range uint16(20) {
		mustStore(t, c, s, pkt(s, 4), ms(int(s)))
	}
	for s := range uint16(12) {
		wantMissing(t, c, s)
	}
	for s := uint16(12); s < 20; s++ {
		wantPacket(t, c, s, 4, ms(int(s)))
	}
}

// A sequence number is only found for the wrap cycle it was stored in.
func TestStaleWrap(t *testing.T) {
	c := newCache(t, 8, 16)
	for i := range 65536 + 4 {
		s := uint16(i)
		p := []byte{byte(i >> 16), byte(i >> 8), byte(i)}
		mustStore(t, c, s, p, ms(i))
	}
	dst := make([]byte, 16)
	n, _, ok := c.Get(0, dst)
	if !ok || !bytes.Equal(dst[:n], []byte{1, 0, 0}) {
		t.Fatalf("Get(0) = % x %v, want the second cycle's packet", dst[:n], ok)
	}
	for _, s := range []uint16{4, 5, 65530} { // next cycle's numbers, or evicted
		wantMissing(t, c, s)
	}
}

// A gap leaves older packets in the skipped slots; they must not be
// returned for the skipped numbers.
func TestGapSlotsHoldOlderPackets(t *testing.T) {
	c := newCache(t, 8, 16)
	for s := range uint16(8) {
		mustStore(t, c, s, pkt(s, 4), t0)
	}
	mustStore(t, c, 12, pkt(12, 4), t0)
	for s := uint16(5); s < 12; s++ {
		if s <= 7 {
			wantPacket(t, c, s, 4, t0)
		} else {
			wantMissing(t, c, s)
		}
	}
	wantMissing(t, c, 4) // behind the window although its slot is intact
}

func TestOutOfOrder(t *testing.T) {
	c := newCache(t, 8, 16)
	order := []uint16{10, 12, 11, 9, 14, 13, 7}
	for i, s := range order {
		mustStore(t, c, s, pkt(s, int(s)), ms(i))
	}
	for i, s := range order {
		wantPacket(t, c, s, int(s), ms(i))
	}
	// 6 is behind the window [7, 14] and would evict 14.
	if err := c.Store(6, pkt(6, 1), t0); !errors.Is(err, ErrTooOld) {
		t.Fatalf("Store(6) err = %v, want ErrTooOld", err)
	}
	wantPacket(t, c, 14, 14, ms(4))
}

func TestDuplicateReplaces(t *testing.T) {
	c := newCache(t, 8, 16)
	mustStore(t, c, 1, pkt(1, 8), ms(1))
	mustStore(t, c, 1, pkt(1, 3), ms(2))
	wantPacket(t, c, 1, 3, ms(2))
}

func TestOversize(t *testing.T) {
	c := newCache(t, 8, 16)
	mustStore(t, c, 1, pkt(1, 16), t0)
	if err := c.Store(2, pkt(2, 17), t0); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("err = %v, want ErrTooLarge", err)
	}
	wantMissing(t, c, 2)
	wantPacket(t, c, 1, 16, t0)
	// The rejected packet did not move the window either.
	if err := c.Store(60000, pkt(0, 17), t0); !errors.Is(err, ErrTooLarge) {
		t.Fatal(err)
	}
	mustStore(t, c, 0, pkt(0, 1), t0)
	wantPacket(t, c, 0, 1, t0)
}

func TestGetShortDst(t *testing.T) {
	c := newCache(t, 8, 16)
	mustStore(t, c, 1, pkt(1, 10), t0)
	if _, _, ok := c.Get(1, make([]byte, 9)); ok {
		t.Fatal("Get into a short buffer succeeded")
	}
	if n, _, ok := c.Get(1, make([]byte, 10)); !ok || n != 10 {
		t.Fatalf("Get = %d %v", n, ok)
	}
}

func TestResend(t *testing.T) {
	const rtt = 100 * time.Millisecond
	c := newCache(t, 8, 16)
	dst := make([]byte, 16)
	mustStore(t, c, 5, pkt(5, 4), ms(0))

	if n, ok := c.Resend(5, dst, ms(50), rtt, 0); !ok || !bytes.Equal(dst[:n], pkt(5, 4)) {
		t.Fatalf("first NACK, within one RTT of the send: Resend = % x %v, want the packet", dst[:n], ok)
	}
	if _, ok := c.Resend(5, dst, ms(100), rtt, 0); ok {
		t.Fatal("resent within one RTT of the last resend")
	}
	if n, ok := c.Resend(5, dst, ms(150), rtt, 0); !ok || !bytes.Equal(dst[:n], pkt(5, 4)) {
		t.Fatalf("Resend one RTT after the last resend = % x %v", dst[:n], ok)
	}
	if !c.MarkResent(5, ms(300)) {
		t.Fatal("MarkResent of a cached packet failed")
	}
	wantPacket(t, c, 5, 4, ms(300))
	if _, ok := c.Resend(6, dst, ms(1000), rtt, 0); ok {
		t.Fatal("resent a packet never stored")
	}
	if c.MarkResent(6, ms(1000)) {
		t.Fatal("MarkResent of a packet never stored")
	}
}

// TestResendMaxAge: the age limit counts from the first send, so resends do not
// keep a packet answerable forever.
func TestResendMaxAge(t *testing.T) {
	const maxAge = 300 * time.Millisecond
	c := newCache(t, 8, 16)
	dst := make([]byte, 16)
	mustStore(t, c, 5, pkt(5, 4), ms(0))
	if _, ok := c.Resend(5, dst, ms(200), 0, maxAge); !ok {
		t.Fatal("a packet younger than maxAge was not resent")
	}
	if _, ok := c.Resend(5, dst, ms(301), 0, maxAge); ok {
		t.Fatal("a packet first sent more than maxAge ago was resent")
	}
	if _, ok := c.Resend(5, dst, ms(301), 0, 0); !ok {
		t.Fatal("maxAge 0 must mean no limit")
	}
}

func TestReset(t *testing.T) {
	c := newCache(t, 8, 16)
	mustStore(t, c, 40000, pkt(1, 4), t0)
	c.Reset()
	wantMissing(t, c, 40000)
	// After a reset any number starts a new window, even one that would
	// otherwise count as too old.
	mustStore(t, c, 39990, pkt(39990, 4), t0)
	wantPacket(t, c, 39990, 4, t0)
}

// A jump far back means the numbering restarted: the cache starts over.
func TestRestart(t *testing.T) {
	c := newCache(t, 8, 16)
	for s := range uint16(21) {
		mustStore(t, c, s, pkt(s, 4), t0)
	}
	mustStore(t, c, 60000, pkt(60000, 4), ms(1))
	wantPacket(t, c, 60000, 4, ms(1))
	wantMissing(t, c, 20)
	mustStore(t, c, 60001, pkt(60001, 4), ms(2))
	wantPacket(t, c, 60001, 4, ms(2))
}

// A stray packet ahead of the stream stalls the cache for at most its
// capacity: packets between C and 2C behind it are dropped, nearer ones kept.
func TestStrayPacketAhead(t *testing.T) {
	c := newCache(t, 8, 16)
	for s := range uint16(10) {
		mustStore(t, c, s, pkt(s, 4), t0)
	}
	mustStore(t, c, 20, pkt(20, 4), t0) // stray
	for s := uint16(10); s <= 12; s++ {
		if err := c.Store(s, pkt(s, 4), t0); !errors.Is(err, ErrTooOld) {
			t.Fatalf("Store(%d) err = %v, want ErrTooOld", s, err)
		}
	}
	mustStore(t, c, 13, pkt(13, 4), t0)
	wantPacket(t, c, 13, 4, t0)
	wantPacket(t, c, 20, 4, t0)

	// A stray 2C or more ahead restarts the cache at the next real packet.
	mustStore(t, c, 100, pkt(100, 4), t0)
	mustStore(t, c, 14, pkt(14, 4), t0)
	wantPacket(t, c, 14, 4, t0)
	wantMissing(t, c, 100)
	wantMissing(t, c, 13)
}

func TestAllocs(t *testing.T) {
	c := newCache(t, 512, DefaultSlotSize)
	p := pkt(0, 1200)
	dst := make([]byte, DefaultSlotSize)
	seq := uint16(0)
	a := testing.AllocsPerRun(1000, func() {
		_ = c.Store(seq, p, t0)
		_, _, _ = c.Get(seq-3, dst)
		_ = c.MarkResent(seq-3, t0)
		_, _ = c.Resend(seq-5, dst, t0, time.Millisecond, 0)
		seq++
	})
	if a != 0 {
		t.Fatalf("allocates %v per packet", a)
	}
}

func BenchmarkStore(b *testing.B) {
	c := newCache(b, 512, DefaultSlotSize)
	p := pkt(0, 1200)
	b.ReportAllocs()
	b.SetBytes(int64(len(p)))
	seq := uint16(0)
	for b.Loop() {
		if err := c.Store(seq, p, t0); err != nil {
			b.Fatal(err)
		}
		seq++
	}
}

func BenchmarkGet(b *testing.B) {
	c := newCache(b, 512, DefaultSlotSize)
	for s := range uint16(512) {
		mustStore(b, c, s, pkt(s, 1200), t0)
	}
	dst := make([]byte, DefaultSlotSize)
	b.ReportAllocs()
	b.SetBytes(1200)
	seq := uint16(0)
	for b.Loop() {
		if _, _, ok := c.Get(seq&511, dst); !ok {
			b.Fatal("miss")
		}
		seq++
	}
}

// At MaxCapacity the window is half the number space and still unambiguous.
func TestMaxCapacity(t *testing.T) {
	c := newCache(t, MaxCapacity, 2)
	const total = 70000
	for i := range total {
		mustStore(t, c, uint16(i), []byte{byte(i >> 8), byte(i)}, t0)
	}
	dst := make([]byte, 2)
	for back := range MaxCapacity + 1 {
		i := total - 1 - back
		n, _, ok := c.Get(uint16(i), dst)
		if back == MaxCapacity {
			if ok {
				t.Fatalf("Get(%d) found beyond the window", uint16(i))
			}
			break
		}
		if !ok || n != 2 || dst[0] != byte(i>>8) || dst[1] != byte(i) {
			t.Fatalf("Get(%d) = % x %v", uint16(i), dst[:n], ok)
		}
	}
}
