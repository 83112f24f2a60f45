package e2e

import (
	"testing"

	"github.com/podium-sfu/podium/internal/forward"
)

// vp8Frames puts repaired packets back in order, and leaves out the frames
// predicted from a frame it could not assemble, up to the next keyframe.
func TestVP8FramesReassemblesInSequenceOrder(t *testing.T) {
	// One-packet frames: descriptor 0x10 (start of partition 0), then the
	// first byte of the VP8 header (bit 0 clear: keyframe).
	frame := func(seq uint16, key bool) forward.TapPacket {
		b := byte(1)
		if key {
			b = 0
		}
		return forward.TapPacket{SSRC: 7, Seq: seq, Marker: true, Payload: []byte{0x10, b, byte(seq)}}
	}
	in := []forward.TapPacket{frame(65534, true), frame(0, false), frame(65535, false), frame(1, false), frame(1, false)}
	if got := vp8Frames(in); len(got) != 4 || got[1][1] != 255 || got[2][1] != 0 {
		t.Fatalf("reordered across the wrap: %d frames %v", len(got), got)
	}
	// Packet 2 never arrives: 3 and 4 were predicted from it; 5 is a keyframe.
	in = []forward.TapPacket{frame(0, true), frame(1, false), frame(3, false), frame(4, false), frame(5, true), frame(6, false)}
	if got := vp8Frames(in); len(got) != 4 {
		t.Fatalf("after a missing frame: %d frames, want 4 (0, 1, 5, 6)", len(got))
	}
}
