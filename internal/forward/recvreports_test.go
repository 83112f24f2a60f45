package forward

import (
	"testing"
	"time"

	"github.com/pion/webrtc/v4"
)

// TestOnLossTellsOfAGapAndCanBeCleared: a gap on a stream that repairs losses
// calls the OnLoss function; after OnLoss(nil) a gap calls nothing (and does
// not panic on the receiving goroutine).
func TestOnLossTellsOfAGapAndCanBeCleared(t *testing.T) {
	codec := vp8Codec
	codec.RTCPFeedback = []webrtc.RTCPFeedback{{Type: webrtc.TypeRTCPFBNACK}}
	up := NewUpTrack(UpTrackParams{Source: "p", Kind: webrtc.RTPCodecTypeVideo, SSRC: srcVideoSSRC, Codec: codec})
	told := 0
	up.OnLoss(func() { told++ })
	v := &video{t: t}
	var pkt Packet
	now := time.Now()
	up.parse(now, v.next(vp8Key, true), &pkt, true)
	v.next(vp8Delta, true) // lost
	up.parse(now, v.next(vp8Delta, true), &pkt, true)
	if told != 1 {
		t.Fatalf("a lost packet told OnLoss %d times, want 1", told)
	}

	up.OnLoss(nil)
	v.next(vp8Delta, true) // lost again, nobody to tell
	up.parse(now, v.next(vp8Delta, true), &pkt, true)
	if told != 1 || !up.Awaiting() {
		t.Fatalf("after OnLoss(nil): told %d times, awaiting %v", told, up.Awaiting())
	}
}
