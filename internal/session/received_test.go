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

// receivedVideo is a receive side with one VP8 stream (SSRC 0x1234) that
// repairs losses, and a function that has a packet of it arrive now.
func receivedVideo() (*received, func(seq uint16)) {
	up := forward.NewUpTrack(forward.UpTrackParams{Kind: webrtc.RTPCodecTypeVideo, SSRC: 0x1234,
		Codec: webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeVP8, ClockRate: 90000,
			RTCPFeedback: []webrtc.RTCPFeedback{{Type: "nack"}, {Type: "nack", Parameter: "pli"}}},
		Read: func([]byte) (int, error) { select {} }})
	r := newReceived(wire.NewInbound(), nil)
	r.add(up)
	out := wire.NewBatch(4)
	return r, func(seq uint16) {
		b, _ := (&rtp.Packet{Header: rtp.Header{Version: 2, PayloadType: 96, SequenceNumber: seq, SSRC: 0x1234}}).Marshal()
		up.Receive(time.Now(), b, out)
	}
}

// TestReceivedSendsNACKsAndReports: with the publishers' packets read at the
// socket, the session NACKs what a stream misses and reports on every stream,
// as pion's interceptors did.
func TestReceivedSendsNACKsAndReports(t *testing.T) {
	r, send := receivedVideo()
	for _, seq := range []uint16{10, 11, 14} { // 12 and 13 lost
		send(seq)
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

// TestReceivedNACKsALossAtOnceWithoutTicking: with nothing missing the loop
// sleeps until the report; a loss wakes it, and its NACK leaves within a
// NACK interval, long before the report.
func TestReceivedNACKsALossAtOnceWithoutTicking(t *testing.T) {
	r, send := receivedVideo()
	got := make(chan []rtcp.Packet, 100)
	done := make(chan struct{})
	defer close(done)
	started := time.Now()
	go r.run(done, func() time.Duration { return time.Hour }, func(p []rtcp.Packet) error { got <- p; return nil })
	for seq := uint16(1); seq <= 10; seq++ {
		send(seq)
		time.Sleep(10 * time.Millisecond)
	}
	send(13) // 11 and 12 lost
	lostAt := time.Now()
	select {
	case pkts := <-got:
		nack, ok := pkts[0].(*rtcp.TransportLayerNack)
		if !ok || len(pkts) != 1 {
			t.Fatalf("first RTCP %v, want the NACK alone (no report yet: the loop started %v ago)", pkts, time.Since(started))
		}
		if seqs := nack.Nacks[0].PacketList(); len(seqs) != 2 || seqs[0] != 11 || seqs[1] != 12 {
			t.Fatalf("NACKed %v, want 11 and 12", seqs)
		}
		if wait := time.Since(lostAt); wait > 500*time.Millisecond {
			t.Fatalf("NACK %v after the loss, want within a NACK interval (%v) of it, not at the report", wait, nackInterval)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("nothing sent in 3 s")
	}
}

func TestNextRound(t *testing.T) {
	t0 := time.Unix(100, 0)
	for _, c := range []struct {
		name      string
		sinceLast time.Duration
		fast      bool
		want      time.Duration
	}{
		{"waiting for repairs", 300 * time.Millisecond, true, nackInterval},
		{"nothing missing: at the next report", 300 * time.Millisecond, false, reportInterval - 300*time.Millisecond},
		{"report just sent", 0, false, reportInterval},
		{"report overdue: soon, not at once", 2 * reportInterval, false, nackInterval},
	} {
		if got := nextRound(t0, t0.Add(-c.sinceLast), c.fast); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
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
