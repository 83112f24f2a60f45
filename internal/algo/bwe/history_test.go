package bwe

import (
	"testing"
	"time"
	"unsafe"
)

// Every packet sent writes a slot: two to a cache line, none straddling two.
func TestHistorySlotIsHalfACacheLine(t *testing.T) {
	if n := unsafe.Sizeof(sent{}); n != 32 {
		t.Errorf("a history slot is %d bytes, want 32", n)
	}
}

func TestHistoryWrap(t *testing.T) {
	h := newHistory(100) // rounded up to 128
	if len(h.slots) != 128 {
		t.Fatalf("%d slots", len(h.slots))
	}
	seq := uint16(65500)
	for i := 0; i < 100; i++ {
		h.add(seq, time.Duration(i))
		seq++
	}
	// The newest is 65500+99 wrapped = 63; look up across the wrap.
	for _, c := range []struct {
		seq  uint16
		at   time.Duration
		want bool
	}{{65500, 0, true}, {65535, 35, true}, {0, 36, true}, {63, 99, true}, {64, 0, false}, {65400, 0, false}} {
		s := h.get(c.seq)
		if (s != nil) != c.want || s != nil && s.at != c.at {
			t.Errorf("get(%d) = %+v, want present %v at %v", c.seq, s, c.want, c.at)
		}
	}
	// 200 more packets overwrite the ring: the old ones are gone.
	for i := 0; i < 200; i++ {
		h.add(seq, time.Duration(100+i))
		seq++
	}
	if h.get(65500) != nil {
		t.Error("overwritten packet still found")
	}
}

// The ring starts small and grows while it would drop packets younger than
// historySpan or still waiting for their feedback, keeping what it held; at
// its largest it wraps, and a slow link's ring stays small.
func TestHistoryGrowsWithTheRate(t *testing.T) {
	fill := func(h *history, n int, every time.Duration) {
		for i := range n {
			h.add(uint16(i), time.Duration(i)*every).reported = true
		}
	}
	slow := newHistory(4096)
	fill(&slow, 2000, 20*time.Millisecond) // 50 packets/s: 256 slots hold 5 s
	if len(slow.slots) != historyStartSlots {
		t.Errorf("a 50 packet/s link's history grew to %d slots", len(slow.slots))
	}
	fast := newHistory(4096)
	fill(&fast, 3000, time.Millisecond) // 1,000 packets/s: 2 s need 2,048 slots
	if len(fast.slots) != 2048 {
		t.Errorf("a 1,000 packet/s link's history has %d slots, want 2048", len(fast.slots))
	}
	for seq := uint16(3000 - 2000); seq < 3000; seq++ { // the last 2 s are all there
		if s := fast.get(seq); s == nil || s.at != time.Duration(seq)*time.Millisecond {
			t.Fatalf("packet %d: %+v", seq, s)
		}
	}
	waiting := newHistory(4096) // 50 packets/s whose feedback never comes
	for i := range 1000 {
		waiting.add(uint16(i), time.Duration(i)*20*time.Millisecond)
	}
	if len(waiting.slots) != 1024 || waiting.get(0) == nil {
		t.Errorf("packets waiting for feedback: %d slots, want all 1,000 kept in 1,024", len(waiting.slots))
	}
	capped := newHistory(1024)
	fill(&capped, 5000, 100*time.Microsecond)
	if len(capped.slots) != 1024 || capped.get(5000-1024) == nil || capped.get(5000-1025) != nil {
		t.Errorf("capped at 1024: %d slots", len(capped.slots))
	}
}

func TestMeter(t *testing.T) {
	var m meter
	// 1 Mb/s: 1250 bytes every 10 ms for 2 s.
	for i := 0; i <= 200; i++ {
		m.add(time.Duration(i)*10*ms1, 1250)
	}
	r, ok := m.rate(500 * ms1)
	if !ok || r < 0.95e6 || r > 1.05e6 {
		t.Errorf("rate %.0f %v, want 1 Mb/s", r, ok)
	}
	// Silence for 300 ms halves the rate at now over 600 ms.
	if r := m.rateAt(2300*ms1, 600*ms1); r < 0.4e6 || r > 0.6e6 {
		t.Errorf("rate after silence %.0f, want ≈ 0.5 Mb/s", r)
	}
	// A jump back by a minute restarts the meter.
	m.add(-time.Minute, 100)
	if _, ok := m.rate(500 * ms1); ok {
		t.Error("rate known right after a restart")
	}
	// Negative times work (receiver clocks can be anywhere).
	var n meter
	for i := 0; i <= 100; i++ {
		n.add(-time.Second+time.Duration(i)*10*ms1, 1250)
	}
	if r, ok := n.rate(500 * ms1); !ok || r < 0.95e6 || r > 1.05e6 {
		t.Errorf("negative-time rate %.0f %v", r, ok)
	}
}
