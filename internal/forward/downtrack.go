package forward

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/pion/rtp"
	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/packetcache"
)

// cacheSlots is the per-destination retransmission history: 512 packets is over
// 1 s of 720p video, more than any NACK round trip we answer.
const cacheSlots = 512

var errNoCodec = errors.New("receiver does not support the codec")

// DownTrack is one UpTrack as sent to one receiver: a pion TrackLocal whose packets
// come from UpTrack.forward. It answers the receiver's NACKs from its own cache.
type DownTrack struct {
	up       *UpTrack
	receiver string // receiving participant's id
	id       string
	streamID string

	selected atomic.Bool // the selection policy's verdict (Last N); audio ignores it

	mu              sync.Mutex // guards everything below; held while writing to pion, a leaf lock
	bound           bool
	writer          webrtc.TrackLocalWriter
	ssrc, rtxSSRC   uint32
	pt, rtxPT       uint8
	rtxSeq          uint16
	waitingKeyframe bool
	hdr             rtp.Header // scratch, reused for every write
	rtxBuf          []byte     // a cached packet being resent
	rtxOut          []byte     // its RTX payload
	cache           *packetcache.Cache
}

// NewDownTrack prepares up for sending to receiver; add it to the receiver's
// subscribe connection, then to up with AddDown.
func NewDownTrack(up *UpTrack, receiver string) *DownTrack {
	d := &DownTrack{
		up:       up,
		receiver: receiver,
		id:       up.Kind().String() + "-" + up.Source(),
		streamID: up.Source(),
	}
	d.selected.Store(true)
	if up.Kind() == webrtc.RTPCodecTypeVideo {
		d.waitingKeyframe = true
		d.cache, _ = packetcache.New(cacheSlots, packetcache.DefaultSlotSize) // constant, valid arguments
		d.rtxBuf = make([]byte, 0, 1500)
		d.rtxOut = make([]byte, 1502)
	}
	return d
}

// Up is the forwarded source track.
func (d *DownTrack) Up() *UpTrack { return d.up }

// Receiver is the receiving participant's id.
func (d *DownTrack) Receiver() string { return d.receiver }

// SetSelected turns forwarding of video on or off (audio is always forwarded).
// Turning it on waits for a keyframe, so the receiver never gets undecodable frames.
func (d *DownTrack) SetSelected(on bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.selected.Load() == on {
		return
	}
	// Arm the gate before accept can see on, or a packet in between would pass
	// write ungated: a delta frame after a gap, undecodable to the receiver.
	if on {
		d.waitingKeyframe = d.cache != nil
	}
	d.selected.Store(on)
}

// ID implements webrtc.TrackLocal.
func (d *DownTrack) ID() string { return d.id }

// RID implements webrtc.TrackLocal.
func (d *DownTrack) RID() string { return "" }

// StreamID implements webrtc.TrackLocal: the source participant's id, which is how
// clients map tracks to tiles.
func (d *DownTrack) StreamID() string { return d.streamID }

// Kind implements webrtc.TrackLocal.
func (d *DownTrack) Kind() webrtc.RTPCodecType { return d.up.Kind() }

// Bind implements webrtc.TrackLocal: pion calls it once the receiver's answer fixed
// the payload types and our SSRCs.
func (d *DownTrack) Bind(ctx webrtc.TrackLocalContext) (webrtc.RTPCodecParameters, error) {
	want := d.up.Codec()
	var codec *webrtc.RTPCodecParameters
	for i, c := range ctx.CodecParameters() {
		if strings.EqualFold(c.MimeType, want.MimeType) {
			codec = &ctx.CodecParameters()[i]
			break
		}
	}
	if codec == nil {
		return webrtc.RTPCodecParameters{}, errNoCodec
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.bound = true
	d.writer = ctx.WriteStream()
	d.ssrc = uint32(ctx.SSRC())
	d.pt = uint8(codec.PayloadType)
	d.rtxSSRC, d.rtxPT = 0, 0
	if rtx := findRTX(ctx.CodecParameters(), codec.PayloadType); rtx != 0 && ctx.SSRCRetransmission() != 0 {
		d.rtxSSRC, d.rtxPT = uint32(ctx.SSRCRetransmission()), rtx
	}
	return *codec, nil
}

// Unbind implements webrtc.TrackLocal.
func (d *DownTrack) Unbind(webrtc.TrackLocalContext) error {
	d.mu.Lock()
	d.bound = false
	d.writer = nil
	d.mu.Unlock()
	return nil
}

func findRTX(codecs []webrtc.RTPCodecParameters, apt webrtc.PayloadType) uint8 {
	want := "apt=" + itoa(int(apt))
	for _, c := range codecs {
		if strings.EqualFold(c.MimeType, webrtc.MimeTypeRTX) && strings.Contains(c.SDPFmtpLine, want) {
			return uint8(c.PayloadType)
		}
	}
	return 0
}

// accept is thesis Algorithm 1's decision for this destination; it never modifies p.
// Audio always goes through; video only while selected.
func (d *DownTrack) accept(*Packet) bool {
	return d.up.Kind() == webrtc.RTPCodecTypeAudio || d.selected.Load()
}

// write is the send pipeline for one packet: keyframe gate, header rewrite, cache,
// hand to pion (SRTP). It reports whether the packet was sent, and whether the
// destination is waiting for a keyframe the sender should be asked for.
func (d *DownTrack) write(p *Packet) (sent, wantKeyframe bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.bound {
		return false, false
	}
	if d.waitingKeyframe {
		if !p.Keyframe {
			return false, true
		}
		d.waitingKeyframe = false
	}
	d.fillHeader(p)
	if d.cache != nil {
		_ = d.cache.Store(p.Header.SequenceNumber, p.Buf, p.Arrival)
	}
	_, err := d.writer.WriteRTP(&d.hdr, p.Payload)
	return err == nil, false
}

// fillHeader rewrites what differs per destination (SSRC, payload type) and drops the
// sender's header extensions, whose ids were negotiated on another connection.
func (d *DownTrack) fillHeader(p *Packet) {
	h := &d.hdr
	h.Version = 2
	h.Padding = false
	h.Extension = false
	h.Extensions = h.Extensions[:0]
	h.CSRC = h.CSRC[:0]
	h.Marker = p.Header.Marker
	h.PayloadType = d.pt
	h.SequenceNumber = p.Header.SequenceNumber
	h.Timestamp = p.Header.Timestamp
	h.SSRC = d.ssrc
}

func itoa(v int) string {
	var b [8]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			return string(b[i:])
		}
	}
}
