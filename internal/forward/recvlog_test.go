package forward

import (
	"slices"
	"testing"
	"time"
)

func TestRecvLogNACKsOncePerRoundTrip(t *testing.T) {
	t0 := time.Unix(100, 0)
	r := newRecvLog(90000, true)
	r.add(t0, 65534, 0)
	r.add(t0, 65535, 3000)
	r.add(t0, 2, 6000) // 0 and 1 lost across the wrap
	rtt := 50 * time.Millisecond
	if got := r.nacks(t0, rtt, nil); !slices.Equal(got, []uint16{0, 1}) {
		t.Fatalf("first NACK %v, want [0 1]", got)
	}
	if got := r.nacks(t0.Add(20*time.Millisecond), rtt, nil); len(got) != 0 {
		t.Fatalf("NACKed again %v within the round trip", got)
	}
	r.add(t0.Add(30*time.Millisecond), 1, 4500) // repaired
	if got := r.nacks(t0.Add(rtt), rtt, nil); !slices.Equal(got, []uint16{0}) {
		t.Fatalf("after a round trip NACKed %v, want [0] (1 was repaired)", got)
	}
	n := 3 // [0 1], then [0]
	for i := 2; i < 20; i++ {
		n += len(r.nacks(t0.Add(time.Duration(i)*rtt), rtt, nil))
	}
	if n != 1+maxNACKs {
		t.Errorf("%d NACKs in all, want %d (packet 1 once, packet 0 %d times)", n, 1+maxNACKs, maxNACKs)
	}
	if rr, _ := r.report(t0, 7, 0, time.Time{}); rr.LastSequenceNumber != 1<<16|2 || rr.TotalLost != 1 {
		t.Errorf("report %+v: want extended highest 65538 and 1 lost", rr)
	}
}

func TestRecvLogReport(t *testing.T) {
	t0 := time.Unix(100, 0)
	r := newRecvLog(48000, false)
	if _, ok := r.report(t0, 1, 0, time.Time{}); ok {
		t.Fatal("a report before any packet")
	}
	for i := range 100 {
		if i%10 == 3 {
			continue // 10 % lost
		}
		r.add(t0.Add(time.Duration(i)*20*time.Millisecond), uint16(1000+i), uint32(960*i))
	}
	sr := t0.Add(time.Second)
	rr, ok := r.report(t0.Add(1500*time.Millisecond), 9, 0xabcd1234, sr)
	if !ok || rr.SSRC != 9 || rr.TotalLost != 10 || rr.FractionLost != 25 || rr.LastSequenceNumber != 1099 {
		t.Errorf("report %+v: want 10 lost, fraction 25/256, highest 1099", rr)
	}
	if rr.LastSenderReport != 0xabcd1234 || rr.Delay != 65536/2 {
		t.Errorf("LSR %x DLSR %d, want abcd1234 and half a second (32768)", rr.LastSenderReport, rr.Delay)
	}
	if rr.Jitter > 10 {
		t.Errorf("jitter %d for packets on their clock", rr.Jitter)
	}
	if len(r.nacks(t0, 0, nil)) != 0 {
		t.Error("NACKs for a stream without NACK feedback")
	}
	rr, _ = r.report(t0.Add(2*time.Second), 9, 0, time.Time{})
	if rr.FractionLost != 0 || rr.TotalLost != 10 {
		t.Errorf("an interval with nothing new: %+v, want fraction 0, cumulative 10", rr)
	}
}

// add says when it put packets on the NACK list: a gap, on a stream that
// repairs losses; not an in-order, late, repeated or repaired packet.
func TestRecvLogSaysWhenPacketsGoMissing(t *testing.T) {
	t0 := time.Unix(100, 0)
	r := newRecvLog(90000, true)
	for i, c := range []struct {
		seq  uint16
		lost bool
	}{{10, false}, {11, false}, {14, true}, {12, false}, {14, false}, {15, false}, {65535, false}, {17, true}} {
		if got := r.add(t0, c.seq, 0); got != c.lost {
			t.Fatalf("packet %d (seq %d): lost %v, want %v", i, c.seq, got, c.lost)
		}
	}
	noNACK := newRecvLog(90000, false)
	noNACK.add(t0, 1, 0)
	if noNACK.add(t0, 5, 0) {
		t.Error("a stream without NACK feedback reported a loss to repair")
	}
}
