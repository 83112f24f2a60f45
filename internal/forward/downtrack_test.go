package forward

import (
	"encoding/binary"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/pion/rtp"
	"github.com/pion/webrtc/v4"
)

func TestDownTrackIsATrackLocal(t *testing.T) {
	var _ webrtc.TrackLocal = (*DownTrack)(nil)
	d := NewDownTrack(newVideoUp(t, nil), "pReceiver")
	if d.ID() != "video-pSender" || d.StreamID() != "pSender" || d.RID() != "" || d.Kind() != webrtc.RTPCodecTypeVideo {
		t.Errorf("id %q stream %q rid %q kind %v", d.ID(), d.StreamID(), d.RID(), d.Kind())
	}
	if d.Receiver() != "pReceiver" {
		t.Errorf("receiver %q", d.Receiver())
	}
	a := NewDownTrack(newAudioUp(t), "pReceiver")
	if a.ID() != "audio-pSender" || a.StreamID() != "pSender" || a.Kind() != webrtc.RTPCodecTypeAudio {
		t.Errorf("audio: id %q stream %q kind %v", a.ID(), a.StreamID(), a.Kind())
	}
}

func TestBind(t *testing.T) {
	d := NewDownTrack(newVideoUp(t, nil), "r")
	got, err := d.Bind(videoContext(1234, 5678).withWriter(&recorder{}))
	if err != nil {
		t.Fatal(err)
	}
	if got.PayloadType != 96 || got.MimeType != webrtc.MimeTypeVP8 {
		t.Errorf("Bind chose %s PT %d, want VP8 PT 96", got.MimeType, got.PayloadType)
	}
	if d.ssrc != 1234 || d.pt != 96 || d.rtxSSRC != 5678 || d.rtxPT != 97 {
		t.Errorf("bound ssrc %d pt %d rtx ssrc %d rtx pt %d, want 1234 96 5678 97 (the RTX with apt=96, not apt=98)", d.ssrc, d.pt, d.rtxSSRC, d.rtxPT)
	}

	// RTX negotiated but no RTX SSRC: plain retransmission.
	if _, err := d.Bind(videoContext(1234, 0).withWriter(&recorder{})); err != nil {
		t.Fatal(err)
	}
	if d.rtxSSRC != 0 || d.rtxPT != 0 {
		t.Errorf("RTX without an RTX SSRC: rtx ssrc %d pt %d", d.rtxSSRC, d.rtxPT)
	}

	// The receiver does not support the sender's codec.
	a := NewDownTrack(newAudioUp(t), "r")
	if _, err := a.Bind(videoContextNoRTX(1).withWriter(&recorder{})); err == nil {
		t.Error("opus track bound to a connection without opus")
	}
	if a.bound {
		t.Error("a failed Bind left the track bound")
	}
}

func TestVideoWaitsForKeyframe(t *testing.T) {
	kf := &keyframeRequests{}
	up := newVideoUp(t, kf)
	rec := &recorder{}
	bindDown(t, up, "r", videoContext(1, 2).withWriter(rec))
	src := &video{t: t}

	feed(t, up, src.next(vp8Delta, false), t0)
	feed(t, up, src.next(vp8Continuation, true), t0.Add(time.Millisecond))
	if n := len(rec.packets()); n != 0 {
		t.Fatalf("%d packets forwarded before any keyframe", n)
	}
	if kf.count() != 1 || kf.ssrcs[0] != srcVideoSSRC {
		t.Fatalf("keyframe requests %x, want one for the sender's SSRC %x", kf.ssrcs, srcVideoSSRC)
	}

	key := src.next(vp8Key, false)
	feed(t, up, key, t0.Add(2*time.Millisecond))
	feed(t, up, src.next(vp8Continuation, true), t0.Add(3*time.Millisecond))
	feed(t, up, src.next(vp8Delta, true), t0.Add(4*time.Millisecond))
	if got, want := rec.seqs(), []uint16{3, 4, 5}; !slices.Equal(got, want) {
		t.Errorf("forwarded sequence numbers %v, want %v (from the keyframe on)", got, want)
	}
	if kf.count() != 1 {
		t.Errorf("%d keyframe requests, want still 1", kf.count())
	}
	s := up.Stats()
	if s.Packets.Load() != 5 || s.Keyframes.Load() != 1 || s.Forwarded.Load() != 3 || s.KeyframeRequests.Load() != 1 {
		t.Errorf("stats: packets %d keyframes %d forwarded %d requests %d, want 5 1 3 1",
			s.Packets.Load(), s.Keyframes.Load(), s.Forwarded.Load(), s.KeyframeRequests.Load())
	}
}

func TestKeyframeRequestsAggregated(t *testing.T) {
	kf := &keyframeRequests{}
	up := newVideoUp(t, kf)
	for _, r := range []string{"r1", "r2", "r3"} {
		bindDown(t, up, r, videoContext(1, 2).withWriter(&recorder{}))
	}
	src := &video{t: t}
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

	// Three destinations waiting, a packet every 10 ms: one request per KeyframeInterval.
	for ms := 0; ms < 299; ms += 10 {
		feed(t, up, src.next(vp8Delta, true), at(ms))
	}
	if kf.count() != 1 {
		t.Fatalf("%d keyframe requests within %v, want 1", kf.count(), KeyframeInterval)
	}
	feed(t, up, src.next(vp8Delta, true), at(300))
	if kf.count() != 2 {
		t.Fatalf("%d keyframe requests after %v, want 2", kf.count(), KeyframeInterval)
	}
	feed(t, up, src.next(vp8Delta, true), at(599))
	if kf.count() != 2 {
		t.Fatalf("%d keyframe requests 299 ms after the last, want 2", kf.count())
	}
	// Once every destination has its keyframe nobody asks any more.
	feed(t, up, src.next(vp8Key, true), at(600))
	for ms := 1000; ms < 3000; ms += 100 {
		feed(t, up, src.next(vp8Delta, true), at(ms))
	}
	if kf.count() != 2 {
		t.Errorf("%d keyframe requests after the keyframe, want 2", kf.count())
	}
}

func TestAudioAlwaysForwarded(t *testing.T) {
	kf := &keyframeRequests{}
	up := NewUpTrack(UpTrackParams{Source: "pSender", Kind: webrtc.RTPCodecTypeAudio, SSRC: srcAudioSSRC, Codec: opusCodec, SendKeyframeRequest: kf.send})
	rec := &recorder{}
	d := bindDown(t, up, "r", audioContext(777).withWriter(rec))

	feed(t, up, rtpPacket(t, srcAudioSSRC, srcAudioPT, 10, 960, true, opusFrame), t0)
	d.SetSelected(false) // Last N applies to video only
	feed(t, up, rtpPacket(t, srcAudioSSRC, srcAudioPT, 11, 1920, false, opusFrame), t0.Add(20*time.Millisecond))
	d.SetSelected(true)
	feed(t, up, rtpPacket(t, srcAudioSSRC, srcAudioPT, 12, 2880, false, opusFrame), t0.Add(40*time.Millisecond))

	pkts := rec.packets()
	if got, want := rec.seqs(), []uint16{10, 11, 12}; !slices.Equal(got, want) {
		t.Fatalf("forwarded %v, want %v", got, want)
	}
	if pkts[0].hdr.SSRC != 777 || pkts[0].hdr.PayloadType != 111 || !pkts[0].hdr.Marker || pkts[0].hdr.Timestamp != 960 {
		t.Errorf("audio header %+v", pkts[0].hdr)
	}
	if kf.count() != 0 || up.RequestKeyframe(t0.Add(time.Hour)) {
		t.Error("keyframe requested for audio")
	}
}

func TestSetSelected(t *testing.T) {
	kf := &keyframeRequests{}
	up := newVideoUp(t, kf)
	rec := &recorder{}
	d := bindDown(t, up, "r", videoContext(1, 2).withWriter(rec))
	src := &video{t: t}
	now := t0
	step := func(payload []byte) {
		now = now.Add(33 * time.Millisecond)
		feed(t, up, src.next(payload, true), now)
	}

	step(vp8Key)   // 1: forwarded
	step(vp8Delta) // 2: forwarded
	d.SetSelected(false)
	step(vp8Delta) // 3: not selected
	step(vp8Key)   // 4: not selected, even a keyframe
	if got, want := rec.seqs(), []uint16{1, 2}; !slices.Equal(got, want) {
		t.Fatalf("forwarded %v while deselected, want %v", got, want)
	}
	if kf.count() != 0 {
		t.Fatalf("%d keyframe requests for a deselected destination", kf.count())
	}
	d.SetSelected(false) // idempotent
	d.SetSelected(true)
	d.SetSelected(true) // idempotent: must not reset the gate once passed
	step(vp8Delta)      // 5: waits for a keyframe, which is asked for
	if kf.count() != 1 {
		t.Fatalf("%d keyframe requests after reselection, want 1", kf.count())
	}
	step(vp8Key)   // 6
	step(vp8Delta) // 7
	d.SetSelected(true)
	step(vp8Delta) // 8: still flowing
	// Packets 6, 7, 8 go out as 3, 4, 5: what selection dropped leaves no gap.
	if got, want := rec.seqs(), []uint16{1, 2, 3, 4, 5}; !slices.Equal(got, want) {
		t.Errorf("forwarded %v, want %v", got, want)
	}
	if pkts := rec.packets(); len(pkts) == 5 && !slices.Equal(pkts[2].payload, vp8Key) {
		t.Errorf("the stream resumed with % x, want the keyframe % x", pkts[2].payload, vp8Key)
	}
}

func TestHeaderRewrite(t *testing.T) {
	up := newVideoUp(t, nil)
	rec := &recorder{stamp: true}
	bindDown(t, up, "r", videoContext(0xCAFE, 0xBEEF).withWriter(rec))

	// Sender's packet: extension, two CSRCs, 3 bytes of padding.
	h := rtp.Header{Version: 2, Marker: true, PayloadType: srcVideoPT, SequenceNumber: 65535,
		Timestamp: 0xDEADBEEF, SSRC: srcVideoSSRC, CSRC: []uint32{7, 8}, Padding: true, PaddingSize: 3}
	if err := h.SetExtension(3, []byte{1, 2, 3, 4}); err != nil {
		t.Fatal(err)
	}
	raw, err := (&rtp.Packet{Header: h, Payload: vp8Key}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	feed(t, up, raw, t0)
	feed(t, up, rtpPacket(t, srcVideoSSRC, srcVideoPT, 0, 0xDEADBEEF+3000, false, vp8Delta), t0.Add(time.Millisecond))

	pkts := rec.packets()
	if len(pkts) != 2 {
		t.Fatalf("%d packets forwarded, want 2", len(pkts))
	}
	want := rtp.Header{Version: 2, Marker: true, PayloadType: 96, SequenceNumber: 65535, Timestamp: 0xDEADBEEF, SSRC: 0xCAFE}
	checkHeader(t, pkts[0].hdr, want)
	if !slices.Equal(pkts[0].payload, vp8Key) {
		t.Errorf("payload % x, want % x (without padding)", pkts[0].payload, vp8Key)
	}
	want = rtp.Header{Version: 2, PayloadType: 96, SequenceNumber: 0, Timestamp: 0xDEADBEEF + 3000, SSRC: 0xCAFE}
	checkHeader(t, pkts[1].hdr, want)
	if !slices.Equal(pkts[1].payload, vp8Delta) {
		t.Errorf("payload % x, want % x", pkts[1].payload, vp8Delta)
	}
}

// checkHeader compares what a receiver would see: the marshalled header.
func checkHeader(t *testing.T, got, want rtp.Header) {
	t.Helper()
	g, err := got.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	w, _ := want.Marshal()
	if !slices.Equal(g, w) {
		t.Errorf("header % x\n  (%+v)\nwant % x\n  (%+v)", g, got, w, want)
	}
	if got.Extension || len(got.Extensions) != 0 || len(got.CSRC) != 0 || got.Padding {
		t.Errorf("sender's extensions, CSRCs or padding leaked: %+v", got)
	}
}

func TestTwoReceiversGetTheirOwnHeaders(t *testing.T) {
	up := newVideoUp(t, nil)
	r1, r2 := &recorder{}, &recorder{}
	bindDown(t, up, "r1", videoContext(100, 101).withWriter(r1))
	ctx2 := videoContextNoRTX(200)
	ctx2.codecs[0].PayloadType = 120
	bindDown(t, up, "r2", ctx2.withWriter(r2))
	feed(t, up, rtpPacket(t, srcVideoSSRC, srcVideoPT, 5, 90, true, vp8Key), t0)
	p1, p2 := r1.packets(), r2.packets()
	if len(p1) != 1 || len(p2) != 1 {
		t.Fatalf("receivers got %d and %d packets", len(p1), len(p2))
	}
	if p1[0].hdr.SSRC != 100 || p1[0].hdr.PayloadType != 96 || p2[0].hdr.SSRC != 200 || p2[0].hdr.PayloadType != 120 {
		t.Errorf("headers %+v and %+v", p1[0].hdr, p2[0].hdr)
	}
}

func TestUnbindAndRemove(t *testing.T) {
	up := newVideoUp(t, nil)
	rec1, rec2 := &recorder{}, &recorder{}
	ctx := videoContext(1, 2).withWriter(rec1)
	d1 := bindDown(t, up, "r1", ctx)
	d2 := bindDown(t, up, "r2", videoContext(3, 4).withWriter(rec2))
	src := &video{t: t}
	feed(t, up, src.next(vp8Key, true), t0)

	if err := d1.Unbind(ctx); err != nil {
		t.Fatal(err)
	}
	up.RemoveDown(d2)
	if downs := up.Downs(); len(downs) != 1 || downs[0] != d1 {
		t.Fatalf("downs after RemoveDown: %v", downs)
	}
	feed(t, up, src.next(vp8Delta, true), t0.Add(time.Millisecond))
	d1.HandleRTCP(t0, nacks(1))
	if got := rec1.seqs(); !slices.Equal(got, []uint16{1}) {
		t.Errorf("unbound track wrote %v", got)
	}
	if got := rec2.seqs(); !slices.Equal(got, []uint16{1}) {
		t.Errorf("removed track wrote %v", got)
	}
}

func TestWriteErrorNotCounted(t *testing.T) {
	up := newVideoUp(t, nil)
	rec := &recorder{err: errors.New("closed")}
	bindDown(t, up, "r", videoContext(1, 2).withWriter(rec))
	feed(t, up, rtpPacket(t, srcVideoSSRC, srcVideoPT, 1, 0, true, vp8Key), t0)
	if n := up.Stats().Forwarded.Load(); n != 0 {
		t.Errorf("forwarded = %d after a failed write", n)
	}
}

func TestRunReadsUntilError(t *testing.T) {
	src := &video{t: t}
	frames := [][]byte{
		src.next(vp8Key, true),
		{0x80, 0x60}, // too short for RTP: counted, dropped
		src.next(vp8Delta, true),
		{0xa0, srcVideoPT, 0, 9, 0, 0, 0, 0, 0x11, 0x11, 0x11, 0x11, 0, 0, 0, 4}, // padding only
		src.next(vp8Delta, true),
	}
	errEnd := errors.New("track ended")
	read := func(b []byte) (int, error) {
		if len(frames) == 0 {
			return 0, errEnd
		}
		n := copy(b, frames[0])
		frames = frames[1:]
		return n, nil
	}
	up := NewUpTrack(UpTrackParams{Source: "pSender", Kind: webrtc.RTPCodecTypeVideo, SSRC: srcVideoSSRC, Codec: vp8Codec, Read: read})
	rec := &recorder{}
	bindDown(t, up, "r", videoContext(1, 2).withWriter(rec))
	done := make(chan struct{})
	go func() { up.Run(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after its reader failed")
	}
	if got, want := rec.seqs(), []uint16{1, 2, 3}; !slices.Equal(got, want) {
		t.Errorf("forwarded %v, want %v", got, want)
	}
	if s := up.Stats(); s.Packets.Load() != 5 || s.Malformed.Load() != 1 {
		t.Errorf("packets %d malformed %d, want 5 and 1", s.Packets.Load(), s.Malformed.Load())
	}
	if up.Codec().MimeType != webrtc.MimeTypeVP8 {
		t.Errorf("codec %+v", up.Codec())
	}
}

// rtxPayload is what RFC 4588 says an RTX packet of seq carries.
func rtxPayload(seq uint16, payload []byte) []byte {
	return append(binary.BigEndian.AppendUint16(nil, seq), payload...)
}

// A late packet the projection drops for its temporal layer had its number
// reserved when the next one went out: the receiver gets a padding-only
// packet under that number instead (a fill), not a hole no NACK repairs.
func TestLateDroppedPacketFilled(t *testing.T) {
	up := newVideoUp(t, nil)
	rec := &recorder{}
	d := bindDown(t, up, "r", videoContext(1, 2).withWriter(rec))
	d.SetLayer(0, 1) // TL0 and TL1
	src := &video{t: t}
	// A VP8 delta frame of TL2: descriptor with X, T and TID 2.
	tl2Delta := []byte{0x90, 0x20, 0x80, 0x51, 0x12, 0x00, 0xaa}
	feed(t, up, src.next(vp8Key, true), t0)
	feed(t, up, src.next(vp8Delta, true), t0.Add(33*time.Millisecond))
	late := src.next(tl2Delta, true)
	feed(t, up, src.next(vp8Delta, true), t0.Add(100*time.Millisecond))
	feed(t, up, late, t0.Add(120*time.Millisecond))
	if got, want := rec.seqs(), []uint16{1, 2, 4, 3}; !slices.Equal(got, want) {
		t.Fatalf("sent %v, want %v", got, want)
	}
	fill := rec.packets()[3]
	if !fill.hdr.Padding || len(fill.payload) != 0 {
		t.Fatalf("number 3 went out as %+v with %d payload bytes, want padding only", fill.hdr, len(fill.payload))
	}
	if c := d.Counters(); c.Fills != 1 || c.Packets != 3 {
		t.Fatalf("counters %+v, want 1 fill beside 3 packets", c)
	}
}
