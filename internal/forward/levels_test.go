package forward

import (
	"testing"
	"time"
)

func TestLevelRingKeepsOrderAndNewest(t *testing.T) {
	var r LevelRing
	t0 := time.Unix(0, 0)
	if got := r.Drain(nil); len(got) != 0 {
		t.Fatalf("empty ring drained %v", got)
	}
	for i := 0; i < 3; i++ {
		r.push(t0.Add(time.Duration(i)*time.Millisecond), uint8(i))
	}
	got := r.Drain(nil)
	if len(got) != 3 || got[0].Raw != 0 || got[2].Raw != 2 {
		t.Fatalf("drained %v", got)
	}
	// Overflow keeps the newest levelRingSize, oldest first.
	for i := 0; i < levelRingSize+10; i++ {
		r.push(t0, uint8(i))
	}
	got = r.Drain(got[:0])
	if len(got) != levelRingSize || got[0].Raw != 10 || got[len(got)-1].Raw != levelRingSize+9 {
		t.Fatalf("after overflow: len %d first %d last %d", len(got), got[0].Raw, got[len(got)-1].Raw)
	}
	if again := r.Drain(nil); len(again) != 0 {
		t.Fatalf("drain did not empty the ring: %v", again)
	}
}

func TestLevelRingPushDoesNotAllocate(t *testing.T) {
	var r LevelRing
	now := time.Now()
	if n := testing.AllocsPerRun(1000, func() { r.push(now, 30) }); n != 0 {
		t.Fatalf("push allocates %v times", n)
	}
}
