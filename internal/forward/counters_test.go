package forward

import (
	"errors"
	"testing"
	"time"

	"github.com/pion/rtp"
	"github.com/pion/webrtc/v4"
)

// TestDropCounters: every packet that is not forwarded is counted under one
// reason, and what is forwarded is counted with its bytes.
func TestDropCounters(t *testing.T) {
	kf := &keyframeRequests{}
	up := newVideoUp(t, kf)
	unbound := NewDownTrack(up, "rUnbound")
	up.AddDown(unbound)
	w := &recorder{}
	d := bindDown(t, up, "r1", videoContext(1000, 2000).withWriter(w))
	v := &video{t: t}

	feed(t, up, v.next(vp8Delta, true), t0) // before any keyframe: held back
	if c := d.Counters(); c.DroppedLayer != 1 || c.Packets != 0 {
		t.Errorf("delta before keyframe: %+v", c)
	}
	feed(t, up, v.next(vp8Key, true), t0)
	feed(t, up, v.next(vp8Delta, true), t0)
	c := d.Counters()
	if c.Packets != 2 || c.Bytes != uint64(2*rtpHeaderLen+len(vp8Key)+len(vp8Delta)) {
		t.Errorf("forwarded: %+v", c)
	}
	if c := unbound.Counters(); c.DroppedUnbound != 3 || c.Packets != 0 {
		t.Errorf("unbound destination: %+v", c)
	}

	// The connection refusing writes.
	w.mu.Lock()
	w.err = errors.New("closed")
	w.mu.Unlock()
	feed(t, up, v.next(vp8Delta, true), t0)
	if c := d.Counters(); c.DroppedSendError != 1 || c.Packets != 2 {
		t.Errorf("send error: %+v", c)
	}

	// Padding-only probes and, while muted, everything is dropped on arrival.
	var pkt Packet
	padding, _ := (&rtp.Packet{Header: rtp.Header{Version: 2, Padding: true, PayloadType: srcVideoPT, SequenceNumber: 99, SSRC: srcVideoSSRC},
		PaddingSize: 4, Payload: []byte{}}).Marshal()
	if up.parse(time.Now(), padding, &pkt, true) {
		t.Error("padding-only packet parsed for forwarding")
	}
	up.SetMuted(true)
	if !up.Muted() || up.parse(time.Now(), v.next(vp8Key, true), &pkt, true) {
		t.Error("muted track parsed a packet for forwarding")
	}
	up.SetMuted(false)
	if !up.parse(time.Now(), v.next(vp8Key, true), &pkt, true) {
		t.Error("unmuted track dropped a keyframe")
	}
	if up.stats.DroppedPadding.Load() != 1 || up.stats.DroppedMuted.Load() != 1 {
		t.Errorf("padding %d, muted %d", up.stats.DroppedPadding.Load(), up.stats.DroppedMuted.Load())
	}
	if up.stats.Malformed.Load() != 0 {
		t.Errorf("malformed %d", up.stats.Malformed.Load())
	}
	if up.parse(time.Now(), []byte{0x80, 1, 2}, &pkt, true) || up.stats.Malformed.Load() != 1 {
		t.Error("a truncated packet is malformed")
	}
}

// TestUnwantedEncodingCounted: an encoding no destination takes is dropped on
// arrival and counted.
func TestUnwantedEncodingCounted(t *testing.T) {
	up := NewUpTrack(UpTrackParams{Source: "pSender", Kind: webrtc.RTPCodecTypeVideo, SSRC: srcVideoSSRC, Codec: vp8Codec, RID: "f", Encoding: 2})
	var pkt Packet
	if up.parse(time.Now(), (&video{t: t}).next(vp8Key, true), &pkt, true) {
		t.Fatal("an encoding nobody receives was parsed for forwarding")
	}
	if up.stats.DroppedUnwanted.Load() != 1 {
		t.Errorf("unwanted %d", up.stats.DroppedUnwanted.Load())
	}
}

// TestMutedAudioNotForwarded: an administrator's mute stops audio at the source,
// whatever the destinations accept.
func TestMutedAudioNotForwarded(t *testing.T) {
	up := newAudioUp(t)
	w := &recorder{}
	d := bindDown(t, up, "r1", audioContext(3000).withWriter(w))
	up.SetMuted(true)
	var pkt Packet
	for i := range 5 {
		if up.parse(time.Now(), rtpPacket(t, srcAudioSSRC, srcAudioPT, uint16(i), 960*uint32(i), false, opusFrame), &pkt, false) {
			up.forward(&pkt, up.testOut())
		}
	}
	if len(w.packets()) != 0 || d.Counters().Packets != 0 || up.stats.DroppedMuted.Load() != 5 {
		t.Errorf("muted audio: %d written, %+v, muted drops %d", len(w.packets()), d.Counters(), up.stats.DroppedMuted.Load())
	}
	up.SetMuted(false)
	feed(t, up, rtpPacket(t, srcAudioSSRC, srcAudioPT, 9, 9600, false, opusFrame), t0)
	if len(w.packets()) != 1 || d.Counters().Packets != 1 {
		t.Errorf("unmuted audio: %d written", len(w.packets()))
	}
}
