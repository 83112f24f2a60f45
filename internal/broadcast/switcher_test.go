package broadcast

import (
	"testing"
	"time"

	"github.com/pion/rtp"
)

// vp8 is a VP8 payload with a 15-bit picture id and TL0PICIDX; key marks a
// keyframe's first packet (P bit clear in the frame tag).
func vp8(pid uint16, tl0 uint8, key bool) []byte {
	tag := byte(0x01) // P set: interframe
	if key {
		tag = 0x00
	}
	return []byte{0x90, 0xc0, 0x80 | byte(pid>>8), byte(pid), tl0, tag, 0, 0, 0, 0}
}

// TestSwitcherContinuesTheStream: the first source passes as it is; a second
// one is held back until its keyframe, then continues sequence numbers,
// timestamps (advanced by the wall-clock gap), picture ids and TL0PICIDX; the
// old source's late packets are dropped.
func TestSwitcherContinuesTheStream(t *testing.T) {
	s := switcher{video: true, clock: 90000}
	t0 := time.Unix(0, 0)
	type step struct {
		at     time.Duration
		source string
		seq    uint16
		ts     uint32
		pid    uint16
		tl0    uint8
		key    bool
		want   string // the stage source announced before the packet
		pass   bool
		outSeq uint16
		outTS  uint32
		outPID uint16
		outTL0 uint8
	}
	steps := []step{
		{0, "a", 100, 1000, 7, 3, false, "", false, 0, 0, 0, 0},    // not a keyframe: nothing to start on
		{0, "a", 101, 1000, 7, 3, true, "", true, 101, 1000, 7, 3}, // a starts as it is
		{33 * time.Millisecond, "a", 102, 3970, 8, 4, false, "", true, 102, 3970, 8, 4},
		{40 * time.Millisecond, "b", 5000, 77, 300, 9, true, "b", true, 103, 3970 + 630, 9, 5}, // 7 ms later: +630 ticks
		{50 * time.Millisecond, "a", 103, 6940, 9, 5, true, "b", false, 0, 0, 0, 0},            // a's late keyframe: b is wanted
		{73 * time.Millisecond, "b", 5001, 3047, 301, 10, false, "b", true, 104, 4600 + 2970, 10, 6},
		{74 * time.Millisecond, "c", 1, 1, 1, 1, false, "c", false, 0, 0, 0, 0}, // c wanted, but no keyframe yet
		{75 * time.Millisecond, "b", 5002, 6017, 302, 11, false, "c", true, 105, 4600 + 5940, 11, 7},
	}
	for i, st := range steps {
		s.want = st.want
		h := rtp.Header{SequenceNumber: st.seq, Timestamp: st.ts}
		p := vp8(st.pid, st.tl0, st.key)
		pass := s.next(t0.Add(st.at), st.source, &h, p)
		if pass != st.pass {
			t.Fatalf("step %d (%s seq %d): forwarded %v, want %v", i, st.source, st.seq, pass, st.pass)
		}
		if !pass {
			continue
		}
		pid := uint16(p[2]&0x7f)<<8 | uint16(p[3])
		if h.SequenceNumber != st.outSeq || h.Timestamp != st.outTS || pid != st.outPID || p[4] != st.outTL0 {
			t.Fatalf("step %d: out seq %d ts %d pid %d tl0 %d, want %d %d %d %d", i, h.SequenceNumber, h.Timestamp, pid, p[4], st.outSeq, st.outTS, st.outPID, st.outTL0)
		}
	}
	if s.switches != 2 {
		t.Errorf("%d switches, want 2", s.switches)
	}
	if src, seq, ok := s.source(105); !ok || src != "b" || seq != 5002 {
		t.Errorf("output 105 maps back to %s %d, want b 5002", src, seq)
	}
}

// TestSwitcherAudioFollowsTheSpeaker: audio switches at any packet of the
// wanted source, and takes any source while none is wanted.
func TestSwitcherAudioFollowsTheSpeaker(t *testing.T) {
	s := switcher{clock: 48000}
	t0 := time.Unix(0, 0)
	pass := func(at time.Duration, src string, seq uint16, ts uint32) (bool, uint16, uint32) {
		h := rtp.Header{SequenceNumber: seq, Timestamp: ts}
		ok := s.next(t0.Add(at), src, &h, []byte{1, 2, 3})
		return ok, h.SequenceNumber, h.Timestamp
	}
	if ok, _, _ := pass(0, "a", 10, 960); !ok {
		t.Fatal("the first source was not taken while nobody is wanted")
	}
	if ok, _, _ := pass(10*time.Millisecond, "b", 500, 50000); ok {
		t.Fatal("b took over while a is live and nobody else is wanted")
	}
	s.want = "b"
	ok, seq, ts := pass(20*time.Millisecond, "b", 501, 50960)
	if !ok || seq != 11 || ts != 960+960 {
		t.Fatalf("b: forwarded %v seq %d ts %d, want true 11 1920", ok, seq, ts)
	}
	if ok, _, _ := pass(21*time.Millisecond, "a", 11, 1920); ok {
		t.Fatal("a still forwarded after the switch to b")
	}
}
