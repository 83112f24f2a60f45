package forward

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/pion/interceptor"
	"github.com/pion/rtp"
	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/wire"
)

// Test doubles for the pion side of the forwarding path: a TrackLocalContext as
// pion passes to Bind, a WriteStream that records, and an UpTrack fed by hand.

const (
	srcVideoSSRC = 0x11111111 // the sender's SSRC, as received
	srcAudioSSRC = 0x22222222
	srcVideoPT   = 100 // the payload type the sender negotiated
	srcAudioPT   = 109
)

var (
	vp8Codec  = webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeVP8, ClockRate: 90000}
	opusCodec = webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeOpus, ClockRate: 48000, Channels: 2}
)

// fakeContext is a webrtc.TrackLocalContext.
type fakeContext struct {
	codecs        []webrtc.RTPCodecParameters
	ssrc, rtxSSRC webrtc.SSRC
	w             webrtc.TrackLocalWriter
	twccID        int // negotiated transport-cc extension id; 0: not negotiated
	playoutID     int // negotiated playout-delay extension id; 0: not negotiated
}

func (c *fakeContext) CodecParameters() []webrtc.RTPCodecParameters { return c.codecs }
func (c *fakeContext) HeaderExtensions() []webrtc.RTPHeaderExtensionParameter {
	exts := []webrtc.RTPHeaderExtensionParameter{{URI: "urn:ietf:params:rtp-hdrext:sdes:mid", ID: 4}}
	if c.twccID != 0 {
		exts = append(exts, webrtc.RTPHeaderExtensionParameter{URI: TransportCCURI, ID: c.twccID})
	}
	if c.playoutID != 0 {
		exts = append(exts, webrtc.RTPHeaderExtensionParameter{URI: PlayoutDelayURI, ID: c.playoutID})
	}
	return exts
}
func (c *fakeContext) withTWCC(id int) *fakeContext                      { c.twccID = id; return c }
func (c *fakeContext) withPlayoutDelay(id int) *fakeContext              { c.playoutID = id; return c }
func (c *fakeContext) SSRC() webrtc.SSRC                                 { return c.ssrc }
func (c *fakeContext) SSRCRetransmission() webrtc.SSRC                   { return c.rtxSSRC }
func (c *fakeContext) SSRCForwardErrorCorrection() webrtc.SSRC           { return 0 }
func (c *fakeContext) WriteStream() webrtc.TrackLocalWriter              { return c.w }
func (c *fakeContext) ID() string                                        { return "ctx" }
func (c *fakeContext) RTCPReader() interceptor.RTCPReader                { return nil }
func (c *fakeContext) String() string                                    { return "fakeContext" }
func (c *fakeContext) withWriter(w webrtc.TrackLocalWriter) *fakeContext { c.w = w; return c }

// videoContext negotiates VP8 as PT 96 with RTX as PT 97 (apt=96), like a browser.
func videoContext(ssrc, rtxSSRC webrtc.SSRC) *fakeContext {
	return &fakeContext{ssrc: ssrc, rtxSSRC: rtxSSRC, codecs: []webrtc.RTPCodecParameters{
		{RTPCodecCapability: opusCodec, PayloadType: 111},
		{RTPCodecCapability: vp8Codec, PayloadType: 96},
		{RTPCodecCapability: webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeRTX, ClockRate: 90000, SDPFmtpLine: "apt=96"}, PayloadType: 97},
		{RTPCodecCapability: webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeVP9, ClockRate: 90000}, PayloadType: 98},
		{RTPCodecCapability: webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeRTX, ClockRate: 90000, SDPFmtpLine: "apt=98"}, PayloadType: 99},
	}}
}

// videoContextNoRTX negotiates VP8 as PT 96 without RTX.
func videoContextNoRTX(ssrc webrtc.SSRC) *fakeContext {
	return &fakeContext{ssrc: ssrc, codecs: []webrtc.RTPCodecParameters{
		{RTPCodecCapability: vp8Codec, PayloadType: 96},
	}}
}

func audioContext(ssrc webrtc.SSRC) *fakeContext {
	return &fakeContext{ssrc: ssrc, codecs: []webrtc.RTPCodecParameters{
		{RTPCodecCapability: opusCodec, PayloadType: 111},
	}}
}

// written is one packet as handed to pion.
type written struct {
	hdr     rtp.Header
	payload []byte
}

// recorder is a WriteStream that keeps copies of everything written to it.
type recorder struct {
	mu   sync.Mutex
	pkts []written
	err  error // returned by every write when set
	// stamp adds a header extension to the header it was handed after recording it,
	// as pion's interceptors do (TWCC sequence numbers, abs-send-time): the next
	// write must not inherit it.
	stamp bool
}

func (r *recorder) WriteRTP(h *rtp.Header, payload []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return 0, r.err
	}
	cp := h.Clone()
	r.pkts = append(r.pkts, written{hdr: cp, payload: append([]byte(nil), payload...)})
	if r.stamp {
		if err := h.SetExtension(5, []byte{byte(len(r.pkts)), 0}); err != nil {
			return 0, err
		}
	}
	return h.MarshalSize() + len(payload), nil
}

func (r *recorder) Write(b []byte) (int, error) {
	return 0, errors.New("recorder: raw writes not expected")
}

func (r *recorder) packets() []written {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]written(nil), r.pkts...)
}

func (r *recorder) seqs() []uint16 {
	var out []uint16
	for _, p := range r.packets() {
		out = append(out, p.hdr.SequenceNumber)
	}
	return out
}

func (r *recorder) reset() {
	r.mu.Lock()
	r.pkts = nil
	r.mu.Unlock()
}

// counter is a WriteStream that only counts: it never allocates.
type counter struct {
	n     int
	bytes int
}

func (c *counter) WriteRTP(h *rtp.Header, payload []byte) (int, error) {
	c.n++
	c.bytes += len(payload)
	return len(payload), nil
}

func (c *counter) Write(b []byte) (int, error) { return len(b), nil }

// keyframeRequests records the UpTrack's requests to the sender.
type keyframeRequests struct {
	mu    sync.Mutex
	ssrcs []uint32
}

func (k *keyframeRequests) send(ssrc uint32) error {
	k.mu.Lock()
	k.ssrcs = append(k.ssrcs, ssrc)
	k.mu.Unlock()
	return nil
}

func (k *keyframeRequests) count() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.ssrcs)
}

func newVideoUp(t testing.TB, kf *keyframeRequests) *UpTrack {
	t.Helper()
	p := UpTrackParams{Source: "pSender", Kind: webrtc.RTPCodecTypeVideo, SSRC: srcVideoSSRC, Codec: vp8Codec}
	if kf != nil {
		p.SendKeyframeRequest = kf.send
	}
	return NewUpTrack(p)
}

func newAudioUp(t testing.TB) *UpTrack {
	t.Helper()
	return NewUpTrack(UpTrackParams{Source: "pSender", Kind: webrtc.RTPCodecTypeAudio, SSRC: srcAudioSSRC, Codec: opusCodec})
}

// bindDown makes a DownTrack of up for receiver, bound to ctx, and adds it to up.
func bindDown(t testing.TB, up *UpTrack, receiver string, ctx *fakeContext) *DownTrack {
	t.Helper()
	d := NewDownTrack(up, receiver)
	if _, err := d.Bind(ctx); err != nil {
		t.Fatalf("Bind: %v", err)
	}
	up.AddDown(d)
	return d
}

// VP8 payloads: a payload descriptor (S=1, PID=0 for a frame's first packet) and
// the first bytes of the frame, whose tag's low bit is 0 for a keyframe.
var (
	vp8Key          = []byte{0x10, 0x50, 0x42, 0x00, 0x9d, 0x01, 0x2a, 0x80, 0x02, 0xe0, 0x01}
	vp8Delta        = []byte{0x10, 0x51, 0x12, 0x00, 0xaa, 0xbb, 0xcc}
	vp8Continuation = []byte{0x00, 0xde, 0xad, 0xbe, 0xef}
	opusFrame       = []byte{0xfc, 0xff, 0xfe, 0x01, 0x02, 0x03}
)

// rtpPacket marshals one packet as a sender would send it, with a header
// extension (audio level, id 1) that must not reach receivers.
func rtpPacket(t testing.TB, ssrc uint32, pt uint8, seq uint16, ts uint32, marker bool, payload []byte) []byte {
	t.Helper()
	h := rtp.Header{Version: 2, Marker: marker, PayloadType: pt, SequenceNumber: seq, Timestamp: ts, SSRC: ssrc}
	if err := h.SetExtension(1, []byte{0x85}); err != nil {
		t.Fatal(err)
	}
	b, err := (&rtp.Packet{Header: h, Payload: payload}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// feed runs one received packet through the per-packet path as Run does, arriving
// at the given time.
func feed(t testing.TB, up *UpTrack, raw []byte, at time.Time) {
	t.Helper()
	var pkt Packet
	video := up.Kind() == webrtc.RTPCodecTypeVideo
	if !up.parse(time.Now(), raw, &pkt, video) {
		if video && !up.wanted() {
			return // nobody forwards this encoding: dropped early, by design
		}
		t.Fatalf("packet dropped by parse: % x", raw)
	}
	pkt.Arrival = at
	up.forward(&pkt, up.testOut())
}

// video is a sender's VP8 stream: seq and timestamp advance like a camera's.
type video struct {
	t   testing.TB
	seq uint16
	ts  uint32
}

func (v *video) next(payload []byte, marker bool) []byte {
	v.seq++
	b := rtpPacket(v.t, srcVideoSSRC, srcVideoPT, v.seq, v.ts, marker, payload)
	if marker {
		v.ts += 3000
	}
	return b
}

// testOuts keep one send batch per track, as a socket reader does.
var testOuts sync.Map // *UpTrack → *wire.Batch

// testOut is the track's send batch in tests that forward by hand.
func (u *UpTrack) testOut() *wire.Batch {
	if b, ok := testOuts.Load(u); ok {
		return b.(*wire.Batch)
	}
	b := wire.NewBatch(fanoutBatch)
	if u.p.Meter != nil {
		b.Stats, b.Sampler = &u.p.Meter.Wire, u.p.Meter
	}
	testOuts.Store(u, b)
	return b
}
