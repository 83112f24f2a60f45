package packetcache

import "testing"

// Evicts names what the next newer packet would overwrite, and Grow keeps
// every packet of the window (across a wrap of the sequence numbers) while
// doubling it.
func TestGrowKeepsTheWindow(t *testing.T) {
	c := newCache(t, 8, 64)
	if _, ok := c.Evicts(1); ok {
		t.Fatal("an empty cache evicts something")
	}
	first := uint16(65530)
	for i := range 8 {
		mustStore(t, c, first+uint16(i), pkt(first+uint16(i), 10+i), ms(i))
	}
	if at, ok := c.Evicts(first + 8); !ok || !at.Equal(ms(0)) {
		t.Fatalf("Evicts(next) = %v %v, want the oldest packet's time", at, ok)
	}
	if _, ok := c.Evicts(first + 3); ok {
		t.Fatal("storing a held number again evicts nothing")
	}
	g := c.Grow()
	if g.Capacity() != 16 {
		t.Fatalf("capacity %d after Grow, want 16", g.Capacity())
	}
	for i := range 8 {
		wantPacket(t, g, first+uint16(i), 10+i, ms(i))
	}
	if _, ok := g.Evicts(first + 8); ok {
		t.Fatal("a grown cache evicts at once")
	}
	for i := 8; i < 16; i++ {
		mustStore(t, g, first+uint16(i), pkt(first+uint16(i), 10+i), ms(i))
	}
	for i := range 16 {
		wantPacket(t, g, first+uint16(i), 10+i, ms(i))
	}
}

// Resize moves the newest packets that fit into slots of another size or
// number; a bad size is refused.
func TestResizeKeepsWhatFits(t *testing.T) {
	c := newCache(t, 8, 64)
	for i := range 8 {
		mustStore(t, c, uint16(100+i), pkt(uint16(100+i), 10+5*i), ms(i)) // 10 … 45 bytes
	}
	bigger, err := c.Resize(8, 128)
	if err != nil || bigger.SlotSize() != 128 || bigger.Capacity() != 8 {
		t.Fatalf("Resize(8, 128): %v", err)
	}
	for i := range 8 {
		wantPacket(t, bigger, uint16(100+i), 10+5*i, ms(i))
	}
	if err := bigger.Store(108, make([]byte, 100), ms(8)); err != nil {
		t.Fatalf("a 100-byte packet in 128-byte slots: %v", err)
	}
	smaller, err := c.Resize(4, 32) // the newest 4: 104 … 107, of which 104 and 105 fit
	if err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		seq, size := uint16(100+i), 10+5*i
		_, _, ok := smaller.Get(seq, make([]byte, 64))
		if want := i >= 4 && size <= 32; ok != want {
			t.Errorf("packet %d (%d bytes) kept %v, want %v", seq, size, ok, want)
		}
	}
	if _, err := c.Resize(6, 64); err != ErrBadConfig {
		t.Errorf("Resize to 6 slots: %v, want ErrBadConfig", err)
	}
}
