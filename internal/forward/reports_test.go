package forward

import (
	"testing"
	"time"

	"github.com/pion/rtcp"
)

// A sender report is relayed with our SSRC, our counts and the RTP time moved by
// exactly what the projection adds to timestamps, also after a resume that shifted
// the timeline.
func TestSenderReportTranslated(t *testing.T) {
	up := newVideoUp(t, nil)
	rec := &recorder{}
	d := bindDown(t, up, "r", videoContext(0xA, 0xB).withWriter(rec))
	var sent []rtcp.Packet
	d.SetRTCPWriter(func(p []rtcp.Packet) error { sent = append(sent, p...); return nil })

	feed(t, up, rtpPacket(t, srcVideoSSRC, srcVideoPT, 100, 9000, true, vp8Key), t0)
	d.SetSelected(false)
	d.SetSelected(true)
	// The sender resumes two seconds later with a timestamp from elsewhere.
	const inTS = 5_000_000
	feed(t, up, rtpPacket(t, srcVideoSSRC, srcVideoPT, 101, inTS, true, vp8Key), t0.Add(2*time.Second))
	pkts := rec.packets()
	if len(pkts) != 2 {
		t.Fatalf("%d packets forwarded, want 2", len(pkts))
	}
	offset := pkts[1].hdr.Timestamp - inTS
	if offset == 0 {
		t.Fatal("test needs a projection that moved timestamps")
	}

	d.relaySenderReport(SenderReport{NTPTime: 0x1122334455667788, RTPTime: inTS + 90}, 0, nil)
	if len(sent) != 1 {
		t.Fatalf("%d RTCP packets sent, want 1", len(sent))
	}
	sr, ok := sent[0].(*rtcp.SenderReport)
	if !ok {
		t.Fatalf("sent %T", sent[0])
	}
	if sr.SSRC != 0xA || sr.NTPTime != 0x1122334455667788 || sr.RTPTime != inTS+90+offset || sr.PacketCount != 2 {
		t.Errorf("translated SR %+v; want SSRC 0xA, same NTP, RTP %d, 2 packets", sr, inTS+90+offset)
	}
	if sr.OctetCount != uint32(len(pkts[0].payload)+len(pkts[1].payload)) {
		t.Errorf("octets %d, want %d", sr.OctetCount, len(pkts[0].payload)+len(pkts[1].payload))
	}

	// A report of an encoding not being forwarded cannot be translated: not sent.
	d.relaySenderReport(SenderReport{NTPTime: 1, RTPTime: 1}, 2, nil)
	if len(sent) != 1 {
		t.Error("relayed a sender report of an encoding that is not forwarded")
	}
}
