package forward

import (
	"encoding/binary"
	"math"
	"testing"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/rtp"
	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/algo/bwe"
)

const twccID = 3

// twccSeq is the transport-wide sequence number a written packet carries.
func twccSeq(t *testing.T, h rtp.Header) (uint16, bool) {
	t.Helper()
	ext := h.GetExtension(twccID)
	if ext == nil {
		return 0, false
	}
	if len(ext) != 2 {
		t.Fatalf("transport-cc extension of %d bytes", len(ext))
	}
	return binary.BigEndian.Uint16(ext), true
}

// linkedPair is one receiver with a video and an audio DownTrack on one Link.
func linkedPair(t *testing.T) (*Link, *UpTrack, *UpTrack, *DownTrack, *recorder) {
	t.Helper()
	l := NewLink(bwe.DefaultConfig())
	rec := &recorder{}
	vup, aup := newVideoUp(t, nil), newAudioUp(t)
	v := NewDownTrack(vup, "r")
	v.SetLink(l)
	if _, err := v.Bind(videoContext(0xA, 0xB).withWriter(rec).withTWCC(twccID)); err != nil {
		t.Fatal(err)
	}
	vup.AddDown(v)
	a := NewDownTrack(aup, "r")
	a.SetLink(l)
	if _, err := a.Bind(audioContext(0xC).withWriter(rec).withTWCC(twccID)); err != nil {
		t.Fatal(err)
	}
	aup.AddDown(a)
	return l, vup, aup, v, rec
}

// TestLinkNumbersEveryPacketInSendOrder: media of all the receiver's tracks
// shares one transport-wide sequence, in the order written.
func TestLinkNumbersEveryPacketInSendOrder(t *testing.T) {
	_, vup, aup, _, rec := linkedPair(t)
	src := &video{t: t}
	feed(t, vup, src.next(vp8Key, true), t0)
	feed(t, aup, rtpPacket(t, srcAudioSSRC, srcAudioPT, 1, 960, false, opusFrame), t0)
	feed(t, vup, src.next(vp8Delta, true), t0.Add(33*time.Millisecond))
	feed(t, aup, rtpPacket(t, srcAudioSSRC, srcAudioPT, 2, 1920, false, opusFrame), t0.Add(40*time.Millisecond))
	pkts := rec.packets()
	if len(pkts) != 4 {
		t.Fatalf("%d packets written, want 4", len(pkts))
	}
	for i, p := range pkts {
		seq, ok := twccSeq(t, p.hdr)
		if !ok || seq != uint16(i+1) {
			t.Errorf("packet %d (SSRC %x) carries transport-wide seq %d (%v), want %d", i, p.hdr.SSRC, seq, ok, i+1)
		}
		if len(p.hdr.Extensions) != 1 {
			t.Errorf("packet %d has %d extensions, want only transport-cc", i, len(p.hdr.Extensions))
		}
	}
}

// TestLinkWithoutNegotiatedExtension: a receiver that did not negotiate
// transport-cc gets no extension at all.
func TestLinkWithoutNegotiatedExtension(t *testing.T) {
	l := NewLink(bwe.DefaultConfig())
	rec := &recorder{}
	up := newVideoUp(t, nil)
	d := NewDownTrack(up, "r")
	d.SetLink(l)
	if _, err := d.Bind(videoContext(0xA, 0xB).withWriter(rec)); err != nil {
		t.Fatal(err)
	}
	up.AddDown(d)
	feed(t, up, (&video{t: t}).next(vp8Key, true), t0)
	if p := rec.packets(); len(p) != 1 || p[0].hdr.Extension {
		t.Fatalf("written %+v, want one packet without extensions", p)
	}
}

func TestLinkTakesREMBAndTransportFeedback(t *testing.T) {
	l, vup, _, v, _ := linkedPair(t)
	src := &video{t: t}
	for i := range 5 {
		feed(t, vup, src.next(vp8Key, true), t0.Add(time.Duration(i)*10*time.Millisecond))
	}
	// Without transport-wide feedback yet, REMB sets the estimate.
	v.HandleRTCP(t0.Add(60*time.Millisecond), []rtcp.Packet{&rtcp.ReceiverEstimatedMaximumBitrate{Bitrate: 400_000}})
	if got := l.Estimate(); got != 400_000 {
		t.Fatalf("estimate %d after REMB 400 kb/s", got)
	}
	fb := &rtcp.TransportLayerCC{BaseSequenceNumber: 1, PacketStatusCount: 5, ReferenceTime: 1,
		PacketChunks: []rtcp.PacketStatusChunk{&rtcp.RunLengthChunk{PacketStatusSymbol: rtcp.TypeTCCPacketReceivedSmallDelta, RunLength: 5}},
		RecvDeltas: []*rtcp.RecvDelta{
			{Type: rtcp.TypeTCCPacketReceivedSmallDelta, Delta: 0}, {Type: rtcp.TypeTCCPacketReceivedSmallDelta, Delta: 10000},
			{Type: rtcp.TypeTCCPacketReceivedSmallDelta, Delta: 10000}, {Type: rtcp.TypeTCCPacketReceivedSmallDelta, Delta: 10000},
			{Type: rtcp.TypeTCCPacketReceivedSmallDelta, Delta: 10000},
		}}
	v.HandleRTCP(t0.Add(80*time.Millisecond), []rtcp.Packet{fb})
	bad := &rtcp.TransportLayerCC{PacketStatusCount: 5,
		PacketChunks: []rtcp.PacketStatusChunk{&rtcp.RunLengthChunk{PacketStatusSymbol: rtcp.TypeTCCPacketNotReceived, RunLength: 2}}}
	v.HandleRTCP(t0.Add(90*time.Millisecond), []rtcp.Packet{bad})
	s := l.Stats()
	if s.Feedbacks != 1 || s.MalformedFeedback != 1 {
		t.Fatalf("feedbacks %d malformed %d, want 1 and 1", s.Feedbacks, s.MalformedFeedback)
	}
	if s.Estimator.RTT <= 0 {
		t.Errorf("estimator saw no round trip from the feedback: %+v", s.Estimator)
	}
}

// bigStream forwards n 1000-byte packets (a keyframe, then deltas) 1 ms
// apart, of the base temporal layer, or from the second on of layer tid.
func bigStream(t *testing.T, up *UpTrack, n int, tid uint8) {
	t.Helper()
	src := &video{t: t}
	for i := range n {
		p := vp8Layer(tid, false)
		if i == 0 {
			p = vp8Layer(0, true)
		}
		payload := append(p, make([]byte, 1000)...)
		feed(t, up, src.next(payload, true), t0.Add(time.Duration(i)*time.Millisecond))
	}
}

// TestRetransmissionBudget: NACK answers take at most their share of the
// estimate, so a loss burst after a capacity drop does not flood the link;
// those of enhancement-layer packets leave half the burst to the base layer.
func TestRetransmissionBudget(t *testing.T) {
	l, vup, _, v, rec := linkedPair(t)
	bigStream(t, vup, 20, 2)
	rec.reset()
	v.HandleRTCP(t0, []rtcp.Packet{&rtcp.ReceiverEstimatedMaximumBitrate{Bitrate: 100_000}})
	// 20 % of 100 kb/s over 250 ms is 625 bytes; the floor of 3 packets
	// (3,600 bytes) leaves room for one of 1,030 bytes above half of it.
	v.HandleRTCP(t0.Add(30*time.Millisecond), nacks(2, 3, 4, 5, 6, 7, 8, 9, 10, 11))
	if n := len(rec.packets()); n != 1 {
		t.Fatalf("%d retransmissions at 100 kb/s, want 1", n)
	}
	if s := l.Stats(); s.Retransmits != 1 || s.RetransmitsDropped != 9 {
		t.Fatalf("retransmits %d dropped %d, want 1 and 9", s.Retransmits, s.RetransmitsDropped)
	}
	// The budget refills at 2.5 kB/s: none left at once, room again 270 ms later.
	rec.reset()
	v.HandleRTCP(t0.Add(31*time.Millisecond), nacks(12))
	if n := len(rec.packets()); n != 0 {
		t.Fatalf("%d retransmissions with the budget spent, want 0", n)
	}
	v.HandleRTCP(t0.Add(300*time.Millisecond), nacks(20))
	if n := len(rec.packets()); n != 1 {
		t.Fatalf("%d retransmissions after the refill, want 1", n)
	}
}

// TestNACKWindowFollowsRTT: a NACK less than one RTT after the packet was
// resent is ignored (the first is always answered), and packets older than the
// window are not resent.
func TestNACKWindowFollowsRTT(t *testing.T) {
	l, vup, _, v, rec := linkedPair(t)
	l.SetRTT(100 * time.Millisecond)
	bigStream(t, vup, 3, 0) // packets 1..3 sent at t0, +1 ms, +2 ms
	rec.reset()
	v.HandleRTCP(t0.Add(50*time.Millisecond), nacks(2))
	if n := len(rec.packets()); n != 1 {
		t.Fatalf("first NACK, within one RTT of the send: %d retransmissions, want 1", n)
	}
	v.HandleRTCP(t0.Add(100*time.Millisecond), nacks(2))
	if n := len(rec.packets()); n != 1 {
		t.Fatalf("NACK within one RTT of the resend answered (%d retransmissions)", n)
	}
	v.HandleRTCP(t0.Add(150*time.Millisecond), nacks(2))
	if n := len(rec.packets()); n != 2 {
		t.Fatalf("NACK one RTT after the resend: %d retransmissions, want 2", n)
	}
	// The window is max(300 ms, 4 RTT) = 400 ms from the first send.
	v.HandleRTCP(t0.Add(390*time.Millisecond), nacks(3))
	v.HandleRTCP(t0.Add(420*time.Millisecond), nacks(1))
	if n := len(rec.packets()); n != 3 {
		t.Fatalf("%d retransmissions, want 3 (packet 1 is past the window)", n)
	}
	if s := l.Stats(); s.RetransmitsSkipped != 2 {
		t.Fatalf("skipped %d NACKs, want 2", s.RetransmitsSkipped)
	}
}

// TestProbePaddingBetweenFrames: probes are padding-only packets on the media
// SSRC, numbered into the stream between frames, carrying the transport-wide
// sequence and marked as probes.
func TestProbePaddingBetweenFrames(t *testing.T) {
	l, vup, _, v, rec := linkedPair(t)
	src := &video{t: t}
	feed(t, vup, src.next(vp8Key, false), t0)
	if n := v.pad(t0, 1000, nil); n != 0 {
		t.Fatalf("padded %d bytes inside a frame", n)
	}
	feed(t, vup, src.next(vp8Continuation, true), t0)
	sent := v.pad(t0.Add(time.Millisecond), 1000, nil)
	feed(t, vup, src.next(vp8Delta, true), t0.Add(33*time.Millisecond))

	pkts := rec.packets()
	if len(pkts) != 2+4+1 || sent != 4*(12+8+probePadding) {
		t.Fatalf("%d packets written (%d padding bytes), want 2 media, 4 padding, 1 media", len(pkts), sent)
	}
	for i, p := range pkts {
		if p.hdr.SequenceNumber != uint16(i+1) {
			t.Errorf("packet %d has RTP seq %d, want %d", i, p.hdr.SequenceNumber, i+1)
		}
		if seq, ok := twccSeq(t, p.hdr); !ok || seq != uint16(i+1) {
			t.Errorf("packet %d has transport-wide seq %d, want %d", i, seq, i+1)
		}
		padding := i >= 2 && i < 6
		if p.hdr.Padding != padding || padding && (len(p.payload) != 0 || p.hdr.PaddingSize != probePadding || p.hdr.SSRC != 0xA) {
			t.Errorf("packet %d: padding %v size %d payload %d SSRC %x", i, p.hdr.Padding, p.hdr.PaddingSize, len(p.payload), p.hdr.SSRC)
		}
	}
	if pkts[6].hdr.Padding || pkts[6].hdr.PaddingSize != 0 {
		t.Error("media after padding inherited the padding flag")
	}
	if s := l.Stats(); s.ProbePackets != 4 {
		t.Errorf("probe packets %d, want 4", s.ProbePackets)
	}
}

// TestShedLayerStopsTheHigherEncodingAtOnce: a bandwidth downgrade drops the
// encoding being forwarded right away, and the stream resumes, continuous, at
// the lower encoding's keyframe.
func TestShedLayerStopsTheHigherEncodingAtOnce(t *testing.T) {
	rec := &recorder{}
	low := NewUpTrack(UpTrackParams{Source: "pSender", Kind: webrtc.RTPCodecTypeVideo, SSRC: 0x31, Codec: vp8Codec, RID: "q", Encoding: 0,
		SendKeyframeRequest: func(uint32) error { return nil }})
	high := NewUpTrack(UpTrackParams{Source: "pSender", Kind: webrtc.RTPCodecTypeVideo, SSRC: 0x33, Codec: vp8Codec, RID: "f", Encoding: 2,
		SendKeyframeRequest: func(uint32) error { return nil }})
	d := NewDownTrack(high, "r")
	d.Attach(low)
	if _, err := d.Bind(videoContext(0xA, 0xB).withWriter(rec)); err != nil {
		t.Fatal(err)
	}
	high.AddDown(d)
	low.AddDown(d)
	d.SetLayer(2, 2)
	hs, ls := &video{t: t}, &video{t: t}
	feed(t, high, hs.next(vp8Key, true), t0)
	feed(t, high, hs.next(vp8Delta, true), t0.Add(33*time.Millisecond))
	if n := len(rec.packets()); n != 2 {
		t.Fatalf("%d packets of the top encoding forwarded, want 2", n)
	}
	d.ShedLayer(0, 2)
	feed(t, high, hs.next(vp8Delta, true), t0.Add(66*time.Millisecond))
	if n := len(rec.packets()); n != 2 {
		t.Fatalf("the top encoding still forwarded after ShedLayer (%d packets)", n)
	}
	feed(t, low, ls.next(vp8Key, true), t0.Add(70*time.Millisecond))
	pkts := rec.packets()
	if len(pkts) != 3 || pkts[2].hdr.SequenceNumber != pkts[1].hdr.SequenceNumber+1 {
		t.Fatalf("after the lower keyframe: %d packets, seqs %v; want it forwarded next in sequence", len(pkts), rec.seqs())
	}
}

// A packet that waits inside the SFU before it is written (fan-out to other
// receivers, locks) is stamped sent when written: the wait is no network
// delay, so the round trip from its feedback is the path's alone.
func TestLinkStampsSendTimeAtTheWrite(t *testing.T) {
	l, vup, _, v, rec := linkedPair(t)
	written := t0.Add(40 * time.Millisecond) // 40 ms queued in the SFU
	l.clock = func() time.Time { return written }
	feed(t, vup, (&video{t: t}).next(vp8Key, true), t0) // arrived at t0
	if n := len(rec.packets()); n != 1 {
		t.Fatalf("%d packets written, want 1", n)
	}
	fb := &rtcp.TransportLayerCC{BaseSequenceNumber: 1, PacketStatusCount: 1, ReferenceTime: 1,
		PacketChunks: []rtcp.PacketStatusChunk{&rtcp.RunLengthChunk{PacketStatusSymbol: rtcp.TypeTCCPacketReceivedSmallDelta, RunLength: 1}},
		RecvDeltas:   []*rtcp.RecvDelta{{Type: rtcp.TypeTCCPacketReceivedSmallDelta, Delta: 0}}}
	v.HandleRTCP(written.Add(20*time.Millisecond), []rtcp.Packet{fb})
	if rtt := l.Stats().Estimator.RTT; rtt != 20*time.Millisecond {
		t.Errorf("round trip %v from a packet written 40 ms after it arrived and acknowledged 20 ms after the write, want 20ms", rtt)
	}
}

func TestRetransmitShareOnACrowdedPath(t *testing.T) {
	full := 100 * time.Millisecond
	cases := []struct {
		name      string
		competing bool
		loss      float64
		queue     time.Duration
		want      float64
	}{
		{"no loss", false, 0, 0, retransmitShare},
		{"ten flows, 15 % loss, competitive mode", true, 0.15, full, 0.3},
		{"ten flows, 30 % loss: capped", true, 0.30, full, crowdedRetransmitShare},
		{"crowded at 8 %: twice the loss under the plain share", true, 0.08, full, retransmitShare},
		{"our own queue behind a cap (no competitive mode)", false, 0.15, full, retransmitShare},
		{"random loss, no queue", true, 0.15, 0, retransmitShare},
	}
	for _, c := range cases {
		if got := retransmitShareOf(c.competing, c.loss, c.queue); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("%s: share %.3f, want %.3f", c.name, got, c.want)
		}
	}
}

// TestProbeOwed: a pacer step pays the time since the last one; a late step
// of a running cluster pays its whole gap (up to lateStepMax), a cluster's
// first step at most maxProbeDebt, and unsent padding never piles up beyond
// the larger of maxProbeDebt and the gap.
func TestProbeOwed(t *testing.T) {
	const rate = 800_000 // 100,000 bytes/s: 100 bytes a millisecond
	ms := time.Millisecond
	for _, c := range []struct {
		name    string
		unsent  float64
		elapsed time.Duration
		probing bool
		want    float64
	}{
		{"on time", 0, probeTick, true, 500},
		{"on time, with unsent", 300, probeTick, true, 800},
		{"unsent stays bounded", 5000, probeTick, true, 2000},
		{"late step pays its gap", 0, 60 * ms, true, 6000},
		{"very late step pays lateStepMax", 0, time.Second, true, 10000},
		{"late step: unsent beyond the gap dropped", 9000, 60 * ms, true, 6000},
		{"first step after idle: maxProbeDebt", 0, idleTick, false, 2000},
		{"clock went back", 0, -ms, true, 0},
	} {
		if got := probeOwed(c.unsent, rate, c.elapsed, c.probing); math.Abs(got-c.want) > 1e-6 {
			t.Errorf("%s: probeOwed = %.1f, want %.1f", c.name, got, c.want)
		}
	}
}
