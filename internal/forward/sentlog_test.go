package forward

import (
	"testing"
	"time"

	"github.com/podium-sfu/podium/internal/rewrite"
)

// A receiver's log holds the last storeHorizon of what it was sent: a slow
// stream's stays at storeMinSlots entries, a fast one's grows (keeping what it
// held) up to its largest, and then wraps.
func TestSentLogGrowsWithTheRate(t *testing.T) {
	fill := func(l *sentLog, n int, every time.Duration) {
		for i := range n {
			out := rewrite.Output{SequenceNumber: uint16(i), SwitchedTo: -1}
			l.add(out, 0, uint16(i), uint32(i), false, 1000, t0.Add(time.Duration(i)*every))
		}
	}
	slow := newSentLog(cacheSlots)
	fill(slow, 1000, 30*time.Millisecond) // 33 packets/s: 128 entries hold 3.8 s
	if len(slow.entries) != storeMinSlots {
		t.Errorf("a 33 packet/s stream's log grew to %d entries", len(slow.entries))
	}
	fast := newSentLog(cacheSlots)
	fill(fast, 1000, 10*time.Millisecond) // 100 packets/s: 2 s need 256 entries
	if len(fast.entries) != 256 {
		t.Errorf("a 100 packet/s stream's log has %d entries, want 256", len(fast.entries))
	}
	now := t0.Add(1000 * 10 * time.Millisecond)
	for seq := uint16(1000 - 256); seq < 1000; seq++ {
		if e, why := fast.lookup(seq, now, 0, 0); why != resendOK || e.srcSeq != seq {
			t.Fatalf("packet %d: %+v %v", seq, e, why)
		}
	}
	if _, why := fast.lookup(1000-257, now, 0, 0); why != resendUnknown {
		t.Errorf("a packet older than the log: %v", why)
	}
	capped := newSentLog(cacheSlots)
	fill(capped, 2000, time.Millisecond)
	if len(capped.entries) != cacheSlots {
		t.Errorf("a 1,000 packet/s stream's log has %d entries, want the largest, %d", len(capped.entries), cacheSlots)
	}
}
