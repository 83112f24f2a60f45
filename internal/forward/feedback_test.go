package forward

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/rtp"
)

func nacks(seqs ...uint16) []rtcp.Packet {
	return []rtcp.Packet{&rtcp.TransportLayerNack{SenderSSRC: 1, MediaSSRC: 1, Nacks: rtcp.NackPairsFromSequenceNumbers(seqs)}}
}

// sentStream forwards a keyframe and n-1 deltas (sequence numbers 1..n) to a fresh
// destination bound to ctx, and returns what it wrote.
func sentStream(t *testing.T, ctx *fakeContext, n int) (*UpTrack, *DownTrack, *recorder, map[uint16]written) {
	t.Helper()
	up := newVideoUp(t, nil)
	rec := &recorder{stamp: true}
	d := bindDown(t, up, "r", ctx.withWriter(rec))
	src := &video{t: t}
	for i := range n {
		payload := append([]byte(nil), vp8Delta...)
		if i == 0 {
			payload = append([]byte(nil), vp8Key...)
		}
		payload = append(payload, byte(i), byte(i>>8)) // tell the packets apart
		feed(t, up, src.next(payload, i%3 == 2), t0.Add(time.Duration(i)*time.Millisecond))
	}
	orig := map[uint16]written{}
	for _, p := range rec.packets() {
		orig[p.hdr.SequenceNumber] = p
	}
	if len(orig) != n {
		t.Fatalf("%d packets forwarded, want %d", len(orig), n)
	}
	rec.reset()
	return up, d, rec, orig
}

func TestNACKAnsweredWithRTX(t *testing.T) {
	up, d, rec, orig := sentStream(t, videoContext(0xA, 0xB), 10)
	d.HandleRTCP(t0.Add(time.Second), nacks(3, 4, 7))
	d.HandleRTCP(t0.Add(2*time.Second), nacks(3))

	pkts := rec.packets()
	if len(pkts) != 4 {
		t.Fatalf("%d retransmissions, want 4", len(pkts))
	}
	for i, osn := range []uint16{3, 4, 7, 3} {
		p, o := pkts[i], orig[osn]
		want := rtp.Header{Version: 2, Marker: o.hdr.Marker, PayloadType: 97, SequenceNumber: uint16(i), Timestamp: o.hdr.Timestamp, SSRC: 0xB}
		checkHeader(t, p.hdr, want)
		if !slices.Equal(p.payload, rtxPayload(osn, o.payload)) {
			t.Errorf("RTX %d payload % x, want OSN %d then % x", i, p.payload, osn, o.payload)
		}
	}
	s := up.Stats()
	if s.NACKs.Load() != 4 || s.Retransmissions.Load() != 4 {
		t.Errorf("NACKs %d retransmissions %d, want 4 and 4", s.NACKs.Load(), s.Retransmissions.Load())
	}

	// Forwarding goes on with the media SSRC, unaffected by the RTX state. (The
	// projection keeps the timestamp continuous across the sender's jump to 99.)
	feed(t, up, rtpPacket(t, srcVideoSSRC, srcVideoPT, 11, 99, true, vp8Delta), t0.Add(3*time.Second))
	last := rec.packets()[4]
	checkHeader(t, last.hdr, rtp.Header{Version: 2, Marker: true, PayloadType: 96, SequenceNumber: 11, Timestamp: last.hdr.Timestamp, SSRC: 0xA})
	if last.hdr.Timestamp <= orig[10].hdr.Timestamp {
		t.Errorf("timestamp went back: %d after %d", last.hdr.Timestamp, orig[10].hdr.Timestamp)
	}
}

func TestNACKAnsweredPlainWithoutRTX(t *testing.T) {
	for name, ctx := range map[string]*fakeContext{
		"RTX not negotiated":  videoContextNoRTX(0xA),
		"no RTX SSRC granted": videoContext(0xA, 0),
	} {
		t.Run(name, func(t *testing.T) {
			up, d, rec, orig := sentStream(t, ctx, 10)
			d.HandleRTCP(t0.Add(time.Second), nacks(2, 9))
			pkts := rec.packets()
			if len(pkts) != 2 {
				t.Fatalf("%d retransmissions, want 2", len(pkts))
			}
			for i, seq := range []uint16{2, 9} {
				checkHeader(t, pkts[i].hdr, orig[seq].hdr)
				if !slices.Equal(pkts[i].payload, orig[seq].payload) {
					t.Errorf("resent payload % x, want % x", pkts[i].payload, orig[seq].payload)
				}
			}
			if up.Stats().Retransmissions.Load() != 2 {
				t.Errorf("retransmissions %d", up.Stats().Retransmissions.Load())
			}
		})
	}
}

// A stream whose packets outgrow the store's first slots still has them
// resent whole, the small ones from before too.
func TestNACKAnsweredForPacketsBiggerThanTheFirstSlots(t *testing.T) {
	up := newVideoUp(t, nil)
	rec := &recorder{}
	d := bindDown(t, up, "r", videoContextNoRTX(0xA).withWriter(rec)) // resent as sent
	src := &video{t: t}
	small := append(append([]byte(nil), vp8Key...), 1, 2, 3)
	big := append(append([]byte(nil), vp8Delta...), make([]byte, storeSlotSize)...)
	feed(t, up, src.next(small, true), t0)
	feed(t, up, src.next(big, true), t0.Add(33*time.Millisecond))
	sent := rec.packets()
	if len(sent) != 2 {
		t.Fatalf("%d packets forwarded", len(sent))
	}
	rec.reset()
	d.HandleRTCP(t0.Add(100*time.Millisecond), nacks(sent[0].hdr.SequenceNumber, sent[1].hdr.SequenceNumber))
	resent := rec.packets()
	if len(resent) != 2 || !slices.Equal(resent[0].payload, sent[0].payload) || !slices.Equal(resent[1].payload, sent[1].payload) {
		t.Fatalf("resent %d packets, want both as first sent", len(resent))
	}
}

func TestNACKForUnknownPacketsIgnored(t *testing.T) {
	up, d, rec, _ := sentStream(t, videoContext(0xA, 0xB), cacheSlots+100)
	// 1..100 were evicted by the 512 after them; 700 was never sent; 40000 is far away.
	d.HandleRTCP(t0.Add(time.Second), nacks(1, 50, 100, 700, 40000))
	if n := len(rec.packets()); n != 0 {
		t.Errorf("%d packets resent for unknown sequence numbers", n)
	}
	if up.Stats().NACKs.Load() != 5 || up.Stats().Retransmissions.Load() != 0 {
		t.Errorf("NACKs %d retransmissions %d, want 5 and 0", up.Stats().NACKs.Load(), up.Stats().Retransmissions.Load())
	}
	// The oldest packet still cached is answered.
	d.HandleRTCP(t0.Add(time.Second), nacks(101))
	if pkts := rec.packets(); len(pkts) != 1 || pkts[0].hdr.SequenceNumber != 0 || pkts[0].payload[0] != 0 || pkts[0].payload[1] != 101 {
		t.Errorf("NACK for the oldest cached packet: %+v", pkts)
	}
}

func TestNACKForPacketsNotSentToThisReceiver(t *testing.T) {
	up := newVideoUp(t, nil)
	rec := &recorder{}
	d := bindDown(t, up, "r", videoContext(1, 2).withWriter(rec))
	src := &video{t: t}
	feed(t, up, src.next(vp8Delta, true), t0) // 1: before the keyframe, not sent
	feed(t, up, src.next(vp8Key, true), t0)   // 2
	d.SetSelected(false)
	feed(t, up, src.next(vp8Delta, true), t0) // 3: deselected, not sent
	rec.reset()
	d.HandleRTCP(t0, nacks(1, 3))
	if n := len(rec.packets()); n != 0 {
		t.Errorf("resent %d packets the receiver was never sent", n)
	}
}

func TestNACKOnAudioIgnored(t *testing.T) {
	up := newAudioUp(t)
	rec := &recorder{}
	d := bindDown(t, up, "r", audioContext(5).withWriter(rec))
	feed(t, up, rtpPacket(t, srcAudioSSRC, srcAudioPT, 1, 0, false, opusFrame), t0)
	rec.reset()
	d.HandleRTCP(t0, nacks(1))
	if n := len(rec.packets()); n != 0 {
		t.Errorf("audio NACK answered with %d packets", n)
	}
}

func TestReceiverKeyframeRequestsReachTheSender(t *testing.T) {
	kf := &keyframeRequests{}
	up := newVideoUp(t, kf)
	d1 := bindDown(t, up, "r1", videoContext(1, 2).withWriter(&recorder{}))
	d2 := bindDown(t, up, "r2", videoContext(3, 4).withWriter(&recorder{}))

	d1.HandleRTCP(t0, []rtcp.Packet{&rtcp.PictureLossIndication{MediaSSRC: 1}})
	if kf.count() != 1 || kf.ssrcs[0] != srcVideoSSRC {
		t.Fatalf("keyframe requests %x after a PLI, want one for %x", kf.ssrcs, srcVideoSSRC)
	}
	// More PLI and FIR from both receivers within the interval: aggregated.
	d2.HandleRTCP(t0.Add(10*time.Millisecond), []rtcp.Packet{&rtcp.FullIntraRequest{MediaSSRC: 3, FIR: []rtcp.FIREntry{{SSRC: 3, SequenceNumber: 1}}}})
	d1.HandleRTCP(t0.Add(200*time.Millisecond), []rtcp.Packet{
		&rtcp.PictureLossIndication{MediaSSRC: 1}, &rtcp.PictureLossIndication{MediaSSRC: 1},
	})
	if kf.count() != 1 {
		t.Fatalf("%d keyframe requests within %v, want 1", kf.count(), KeyframeInterval)
	}
	d2.HandleRTCP(t0.Add(KeyframeInterval), []rtcp.Packet{&rtcp.FullIntraRequest{MediaSSRC: 3, FIR: []rtcp.FIREntry{{SSRC: 3, SequenceNumber: 2}}}})
	if kf.count() != 2 {
		t.Errorf("%d keyframe requests after the interval, want 2", kf.count())
	}
	if n := up.Stats().ReceiverKeyframes.Load(); n != 5 {
		t.Errorf("ReceiverKeyframes = %d, want 5", n)
	}
	if b1, b2 := d1.Breaks(), d2.Breaks(); b1 != 3 || b2 != 2 {
		t.Errorf("breaks %d and %d, want each receiver's own requests: 3 and 2", b1, b2)
	}
	if n := up.Stats().KeyframeRequests.Load(); n != 2 {
		t.Errorf("KeyframeRequests = %d, want 2", n)
	}
}

func TestReadFeedback(t *testing.T) {
	up, d, rec, _ := sentStream(t, videoContext(0xA, 0xB), 5)
	nack, _ := rtcp.Marshal(nacks(2))
	frames := [][]byte{{0xde, 0xad}, nack} // garbage is skipped
	read := func(b []byte) (int, error) {
		if len(frames) == 0 {
			return 0, errors.New("sender closed")
		}
		n := copy(b, frames[0])
		frames = frames[1:]
		return n, nil
	}
	d.ReadFeedback(read) // returns when read fails
	if pkts := rec.packets(); len(pkts) != 1 || pkts[0].hdr.SSRC != 0xB {
		t.Errorf("feedback answered with %+v", pkts)
	}
	if up.Stats().NACKs.Load() != 1 {
		t.Errorf("NACKs = %d", up.Stats().NACKs.Load())
	}
}
