package session

import (
	"testing"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/rtp"
	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/forward"
	"github.com/podium-sfu/podium/internal/wire"
)

// TestReceivedSendsNACKsAndReports: with the publishers' packets read at the
// socket, the session NACKs what a stream misses and reports on every stream,
// as pion's interceptors did.
func TestReceivedSendsNACKsAndReports(t *testing.T) {
	up := forward.NewUpTrack(forward.UpTrackParams{Kind: webrtc.RTPCodecTypeVideo, SSRC: 0x1234,
		Codec: webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeVP8, ClockRate: 90000,
			RTCPFeedback: []webrtc.RTCPFeedback{{Type: "nack"}, {Type: "nack", Parameter: "pli"}}},
		Read: func([]byte) (int, error) { select {} }})
	r := newReceived(wire.NewInbound(), nil)
	r.add(up)
	out := wire.NewBatch(4)
	for _, seq := range []uint16{10, 11, 14} { // 12 and 13 lost
		b, _ := (&rtp.Packet{Header: rtp.Header{Version: 2, PayloadType: 96, SequenceNumber: seq, SSRC: 0x1234}}).Marshal()
		up.Receive(time.Now(), b, out)
	}
	got := make(chan []rtcp.Packet, 100)
	done := make(chan struct{})
	defer close(done)
	go r.run(done, func() time.Duration { return time.Hour }, func(p []rtcp.Packet) error { got <- p; return nil })
	var nacked []uint16
	reported := false
	deadline := time.After(3 * time.Second)
	for !reported {
		select {
		case pkts := <-got:
			for _, p := range pkts {
				switch p := p.(type) {
				case *rtcp.TransportLayerNack:
					for _, pair := range p.Nacks {
						nacked = append(nacked, pair.PacketList()...)
					}
				case *rtcp.ReceiverReport:
					if len(p.Reports) != 1 || p.Reports[0].SSRC != 0x1234 || p.Reports[0].TotalLost != 2 || p.Reports[0].LastSequenceNumber != 14 {
						t.Fatalf("report %+v: want one block on 0x1234, 2 lost, highest 14", p.Reports)
					}
					reported = true
				}
			}
		case <-deadline:
			t.Fatalf("no receiver report in 3 s (NACKed %v)", nacked)
		}
	}
	if len(nacked) != 2 || nacked[0] != 12 || nacked[1] != 13 {
		t.Fatalf("NACKed %v, want 12 and 13 once (the round trip is an hour)", nacked)
	}
}

// A stream the receive side takes at the socket is taken with its sender
// reports (wire.Inbound.TakeWithReports: pion's SRTCP session decoded each),
// which reach the UpTrack; removed, both are pion's again.
func TestReceivedTakesTheSenderReports(t *testing.T) {
	up := forward.NewUpTrack(forward.UpTrackParams{Kind: webrtc.RTPCodecTypeVideo, SSRC: 0x1234,
		Codec: webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeVP8, ClockRate: 90000},
		Read:  func([]byte) (int, error) { select {} }})
	r := newReceived(wire.NewInbound(), nil)
	r.add(up)
	h := r.in.Reports(0x1234)
	if h == nil {
		t.Fatal("the stream's sender reports are not taken")
	}
	b, _ := (&rtcp.SenderReport{SSRC: 0x1234, NTPTime: 77, RTPTime: 88}).Marshal()
	h(time.Now(), b, wire.NewBatch(1))
	if sr, ok := up.LastSenderReport(); !ok || sr.NTPTime != 77 || sr.RTPTime != 88 {
		t.Fatalf("the UpTrack kept %+v %v, want the report", sr, ok)
	}
	r.remove(up)
	if r.in.Reports(0x1234) != nil {
		t.Fatal("a removed stream's reports are still taken")
	}
}
