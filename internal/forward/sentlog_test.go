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

// An entry keeps the whole rewrite in 32 bytes: a lookup gives back what was
// sent (timestamp, picture ids, marker, our sequence number) on both sides of
// the log's origin, where the extended numbers' low 32 bits wrap; needed
// compares whole extended numbers with the segment's.
func TestSentLogKeepsTheRewrite(t *testing.T) {
	l := newSentLog(cacheSlots)
	outOf := func(seq uint16) rewrite.Output {
		return rewrite.Output{SequenceNumber: seq, Timestamp: 90000 + uint32(seq)*3000, PictureID: 0x7ff0 + seq,
			TL0PICIDX: uint8(seq * 3), KEYIDX: uint8(seq % 32), Marker: seq%2 == 1, SwitchedTo: -1}
	}
	first := uint16(5)
	key := outOf(first)
	key.SwitchedTo = 0
	l.add(key, 0, 100, 1, true, 1000, t0)
	for seq := first + 1; seq != 20; seq++ {
		l.add(outOf(seq), 0, 100+seq, uint32(seq), true, 1000, t0)
	}
	l.add(outOf(0xfffe), 0, 99, 1, true, 1000, t0) // before the first: below the origin
	for _, seq := range []uint16{0xfffe, first, 6, 19} {
		e, why := l.lookup(seq, t0, 0, 0)
		if why != resendOK {
			t.Fatalf("packet %d: %v", seq, why)
		}
		want := outOf(seq)
		if got := e.out(); got != want {
			t.Errorf("packet %d sent as %+v, logged %+v", seq, want, got)
		}
		if needed, want := l.needed(e), seq != 0xfffe; needed != want {
			t.Errorf("packet %d: needed %v, want %v (the segment starts at %d)", seq, needed, want, first)
		}
	}
	if _, why := l.lookup(20, t0, 0, 0); why != resendUnknown {
		t.Errorf("a packet never sent: %v", why)
	}
	e, _ := l.lookup(6, t0, 0, 0)
	l.markResent(e, t0.Add(30*time.Millisecond))
	if _, why := l.lookup(6, t0.Add(40*time.Millisecond), 20*time.Millisecond, 0); why != resendInFlight {
		t.Errorf("resent 10 ms ago with a 20 ms round trip: %v, want in flight", why)
	}
	if _, why := l.lookup(6, t0.Add(60*time.Millisecond), 20*time.Millisecond, 0); why != resendOK {
		t.Errorf("resent 30 ms ago with a 20 ms round trip: %v, want ok", why)
	}
}
