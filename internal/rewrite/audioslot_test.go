package rewrite

import (
	"testing"
	"time"
)

func TestAudioSlotContinuousAcrossSwitch(t *testing.T) {
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	a := NewAudioSlot(48000)
	a.Switch()
	var seq uint16
	var ts uint32
	for i := range 10 {
		s, tt, m, ok := a.Next(at, uint16(100+i), uint32(5000+960*i))
		if !ok || m != (i == 0) || s != uint16(100+i) || tt != uint32(5000+960*i) {
			t.Fatalf("packet %d: %d %d %v %v", i, s, tt, m, ok)
		}
		seq, ts = s, tt
		at = at.Add(20 * time.Millisecond)
	}
	a.Switch()
	at = at.Add(80 * time.Millisecond) // 100 ms after the last packet sent
	s, tt, m, ok := a.Next(at, 60000, 1<<31)
	if !ok || !m || s != seq+1 || tt != ts+4800 {
		t.Fatalf("first of source 2: seq %d ts %d marker %v ok %v, want %d %d true", s, tt, m, ok, seq+1, ts+4800)
	}
	if _, _, _, ok := a.Next(at, 59999, 1<<31-960); ok {
		t.Fatal("a packet older than the epoch's first went through")
	}
	s2, tt2, m2, ok := a.Next(at.Add(20*time.Millisecond), 60001, 1<<31+960)
	if !ok || m2 || s2 != s+1 || tt2 != tt+960 {
		t.Fatalf("second of source 2: %d %d %v %v", s2, tt2, m2, ok)
	}
	// Back to source 1: sequence numbers go on, not back to its own.
	a.Switch()
	s3, _, _, ok := a.Next(at.Add(40*time.Millisecond), 111, 5000+960*11)
	if !ok || s3 != s2+1 {
		t.Fatalf("back to source 1: seq %d, want %d", s3, s2+1)
	}
}
