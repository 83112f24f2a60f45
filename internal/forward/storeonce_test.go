package forward

import (
	"slices"
	"testing"
	"time"
	"unsafe"
)

// Two receivers, one of which paused for a while, get the same source packets
// under different sequence numbers. Each NACKs the same source
// packet: each gets it rewritten as it was first sent to it, both rebuilt from
// the one copy the source keeps.
func TestRetransmissionsComeFromOneStorePerSource(t *testing.T) {
	up := newVideoUp(t, nil)
	early, late := &recorder{}, &recorder{}
	dEarly := bindDown(t, up, "early", videoContextNoRTX(0xA).withWriter(early))
	dLate := bindDown(t, up, "late", videoContextNoRTX(0xB).withWriter(late))
	src := &video{t: t}
	send := func(i int) {
		payload := append([]byte(nil), vp8Delta...)
		if i%10 == 0 {
			payload = append([]byte(nil), vp8Key...)
		}
		payload = append(payload, byte(i), byte(i>>8))
		feed(t, up, src.next(payload, true), t0.Add(time.Duration(i)*time.Millisecond))
	}
	for i := range 30 {
		if i == 12 {
			dLate.SetSelected(false)
		}
		if i == 15 {
			dLate.SetSelected(true) // resumes at the keyframe 20, the gap closed
		}
		send(i)
	}
	// The source packet with tag 25, as each receiver got it.
	find := func(r *recorder) written {
		for _, p := range r.packets() {
			if n := len(p.payload); p.payload[n-2] == 25 && p.payload[n-1] == 0 {
				return p
			}
		}
		t.Fatal("tag 25 not sent")
		return written{}
	}
	a, b := find(early), find(late)
	if a.hdr.SequenceNumber == b.hdr.SequenceNumber {
		t.Fatalf("both receivers got sequence number %d: the test needs different projections", a.hdr.SequenceNumber)
	}
	early.reset()
	late.reset()
	now := t0.Add(100 * time.Millisecond)
	dEarly.HandleRTCP(now, nacks(a.hdr.SequenceNumber))
	dLate.HandleRTCP(now, nacks(b.hdr.SequenceNumber))
	for _, c := range []struct {
		r    *recorder
		want written
	}{{early, a}, {late, b}} {
		got := c.r.packets()
		if len(got) != 1 {
			t.Fatalf("%d retransmissions, want 1", len(got))
		}
		checkHeader(t, got[0].hdr, c.want.hdr)
		if !slices.Equal(got[0].payload, c.want.payload) {
			t.Errorf("retransmission payload % x, want as first sent % x", got[0].payload, c.want.payload)
		}
	}
	// What each destination keeps per packet is its rewrite, not the packet.
	if per := unsafe.Sizeof(sentEntry{}); per > 32 {
		t.Errorf("a destination keeps %d bytes per sent packet", per)
	}
}
