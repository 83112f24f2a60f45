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
