package forward

import (
	"testing"
	"time"

	"github.com/pion/webrtc/v4"
)

// A source store holds storeHorizon of its stream: 128 slots for a 360p
// stream's 60 packets/s (most of meeting-8's live heap was 512-slot stores),
// growing to 512 for 1080p's 300, and every packet of the horizon stays
// retrievable across the growth.
func TestSourceStoreSizedByRate(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		perSecond, want int
	}{{60, 128}, {100, 256}, {300, 512}} {
		up := NewUpTrack(UpTrackParams{Source: "p", Kind: webrtc.RTPCodecTypeVideo, SSRC: srcVideoSSRC, Codec: vp8Codec})
		every := time.Second / time.Duration(tc.perSecond)
		n := 10 * tc.perSecond
		for i := range n {
			b := []byte{0x80, 96, byte(i >> 8), byte(i), 0, 0, 0, 0, 0, 0, 0, 1, byte(i)}
			pkt := Packet{Buf: b, Arrival: t0.Add(time.Duration(i) * every)}
			pkt.Header.SequenceNumber = uint16(i)
			up.keep(&pkt)
		}
		if got := up.store.Capacity(); got != tc.want {
			t.Errorf("%d packets/s: %d slots, want %d", tc.perSecond, got, tc.want)
		}
		dst := make([]byte, 1500)
		for i := n - min(tc.want, 2*tc.perSecond); i < n; i++ {
			if k, ok := up.stored(uint16(i), dst); !ok || k != 13 || dst[12] != byte(i) {
				t.Fatalf("%d packets/s: packet %d of the last 2 s not kept", tc.perSecond, i)
			}
		}
	}
}
