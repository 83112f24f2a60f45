package forward

import (
	"testing"
	"time"

	"github.com/pion/rtcp"
)

// TestSocketRTCPTakesREMBOnlyForOurStreams: RTCP taken at the socket
// (Link.HandleRTCP) applies a REMB only when it names one of the connection's
// media streams, as pion's path does. Chrome's REMB for the RTX stream alone
// (its packets carry no transport-wide number) estimated tens of kb/s under
// loss and capped the estimate (TestAdaptationFivePercentLoss in mode all).
func TestSocketRTCPTakesREMBOnlyForOurStreams(t *testing.T) {
	l, vup, _, _, _ := linkedPair(t)
	src := &video{t: t}
	for i := range 5 {
		feed(t, vup, src.next(vp8Key, true), t0.Add(time.Duration(i)*10*time.Millisecond))
	}
	before := l.Estimate()
	rtx, _ := rtcp.Marshal([]rtcp.Packet{&rtcp.ReceiverEstimatedMaximumBitrate{Bitrate: 40_000, SSRCs: []uint32{0xB}}})
	l.HandleRTCP(t0.Add(60*time.Millisecond), rtx, nil)
	if got := l.Estimate(); got != before {
		t.Fatalf("a REMB naming the RTX stream moved the estimate %d → %d", before, got)
	}
	media, _ := rtcp.Marshal([]rtcp.Packet{&rtcp.ReceiverEstimatedMaximumBitrate{Bitrate: 400_000, SSRCs: []uint32{0xA}}})
	l.HandleRTCP(t0.Add(70*time.Millisecond), media, nil)
	if got := l.Estimate(); got != 400_000 {
		t.Fatalf("estimate %d after a REMB of 400 kb/s naming the video stream", got)
	}
}
