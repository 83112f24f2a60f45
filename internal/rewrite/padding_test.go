package rewrite

import "testing"

func TestPaddingBetweenFrames(t *testing.T) {
	pr := NewProjector()
	if _, _, ok := pr.Padding(); ok {
		t.Fatal("padding before anything was forwarded")
	}
	pr.SetTarget(0, 2)
	low := newSrc(0, 100, 1000, 10, 5)
	key := low.key(t)
	mustForward(t, run(pr, ms(0), low, key[:1]), 1)
	if _, _, ok := pr.Padding(); ok {
		t.Fatal("padding inside a frame")
	}
	last := mustForward(t, run(pr, ms(0), low, key[1:]), 1)[0]
	seq, ts, ok := pr.Padding()
	if !ok || seq != last.SequenceNumber+1 || ts != last.Timestamp {
		t.Fatalf("Padding = %d, %d, %v after seq %d ts %d", seq, ts, ok, last.SequenceNumber, last.Timestamp)
	}
	seq2, _, ok := pr.Padding()
	if !ok || seq2 != seq+1 {
		t.Fatalf("second padding = %d, %v; want %d", seq2, ok, seq+1)
	}

	// A frame whose first packet is late: the padding after it must not take the
	// number reserved for the late packet.
	d := low.delta(t)
	end := mustForward(t, run(pr, ms(33), low, d[1:]), 1)[0]
	if end.SequenceNumber != seq2+2 {
		t.Fatalf("frame after padding ends at %d, want %d", end.SequenceNumber, seq2+2)
	}
	seq3, _, ok := pr.Padding()
	if !ok || seq3 != end.SequenceNumber+1 {
		t.Fatalf("padding after a gap = %d, %v; want %d", seq3, ok, end.SequenceNumber+1)
	}
	late := mustForward(t, run(pr, ms(40), low, d[:1]), 1)[0]
	if late.SequenceNumber != seq2+1 {
		t.Fatalf("late packet got %d, want its reserved %d", late.SequenceNumber, seq2+1)
	}

	// Paused (suspended for bandwidth): padding still goes out, and the resumed
	// stream continues after it.
	pr.SetTarget(-1, 2)
	seq4, _, ok := pr.Padding()
	if !ok || seq4 != seq3+1 {
		t.Fatalf("padding while paused = %d, %v; want %d", seq4, ok, seq3+1)
	}

	// A switch continues after the padding.
	pr.SetTarget(1, 2)
	high := newSrc(1, 5000, 9000, 70, 3)
	sw := mustForward(t, run(pr, ms(66), high, high.key(t)), 2)
	if sw[0].SequenceNumber != seq4+1 {
		t.Fatalf("switch starts at %d, want %d", sw[0].SequenceNumber, seq4+1)
	}
}
