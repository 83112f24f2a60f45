package load

import (
	"encoding/binary"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/rtp"
	"github.com/pion/sdp/v3"
	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/client"
)

var errNoCodec = errors.New("load: the SFU did not accept the codec")

// localTrack is one of our published streams as pion sees it (a TrackLocal):
// Bind tells it the SSRCs and payload types the answer fixed.
type localTrack struct {
	id, streamID, rid string
	codec             webrtc.RTPCodecCapability
	binding           atomic.Pointer[trackBinding]
}

type trackBinding struct {
	ssrc, rtxSSRC uint32
	pt, rtxPT     uint8
	writer        webrtc.TrackLocalWriter
}

func (t *localTrack) ID() string       { return t.id }
func (t *localTrack) RID() string      { return t.rid }
func (t *localTrack) StreamID() string { return t.streamID }
func (t *localTrack) Kind() webrtc.RTPCodecType {
	if strings.HasPrefix(t.codec.MimeType, "audio/") {
		return webrtc.RTPCodecTypeAudio
	}
	return webrtc.RTPCodecTypeVideo
}

// Bind implements webrtc.TrackLocal.
func (t *localTrack) Bind(ctx webrtc.TrackLocalContext) (webrtc.RTPCodecParameters, error) {
	for _, c := range ctx.CodecParameters() {
		if !strings.EqualFold(c.MimeType, t.codec.MimeType) {
			continue
		}
		b := &trackBinding{ssrc: uint32(ctx.SSRC()), pt: uint8(c.PayloadType), writer: ctx.WriteStream()}
		if rtx := ctx.SSRCRetransmission(); rtx != 0 {
			want := "apt=" + strconv.Itoa(int(c.PayloadType))
			for _, r := range ctx.CodecParameters() {
				if strings.EqualFold(r.MimeType, webrtc.MimeTypeRTX) && strings.Contains(r.SDPFmtpLine, want) {
					b.rtxSSRC, b.rtxPT = uint32(rtx), uint8(r.PayloadType)
				}
			}
		}
		t.binding.Store(b)
		return c, nil
	}
	return webrtc.RTPCodecParameters{}, errNoCodec
}

// Unbind implements webrtc.TrackLocal.
func (t *localTrack) Unbind(webrtc.TrackLocalContext) error {
	t.binding.Store(nil)
	return nil
}

// extIDs are the negotiated header extension ids (0: not negotiated).
type extIDs struct {
	mid, rid, rrid, level uint8
	audioMid, videoMid    string
}

// pubConn is a participant's published tracks on one publish connection; a
// reconnect makes a new one. It implements client.Publisher and packetWriter.
// writeRTP is called by the sender loop only; the RTCP readers post to it.
type pubConn struct {
	snd         *sender
	audio       *localTrack
	video       []*localTrack
	audioTr     *webrtc.RTPTransceiver
	videoTr     *webrtc.RTPTransceiver
	ext         extIDs
	acked       []atomic.Bool // by stream: the SFU reported on it, so mid/rid can go
	hdr         rtp.Header    // scratch, sender loop only
	rtxSeq      []uint16
	rtxPayload  []byte
	readers     sync.WaitGroup
	negotiated  atomic.Bool
	participant string
}

// publishStreamID is the msid stream id of what a synthetic participant
// publishes. The SFU names forwarded streams by participant id, so this is
// never seen by receivers; it must be an SDP token (RFC 8830): a display name
// with a space in it made the publish offer's video unusable.
const publishStreamID = "podium-load"

func newPubConn(s *sender, participant string) *pubConn {
	c := &pubConn{snd: s, participant: participant, rtxPayload: make([]byte, maxPayload+2)}
	cfg := s.src.cfg
	if cfg.Speech != nil {
		c.audio = &localTrack{id: "audio", streamID: publishStreamID, codec: opusCodec}
	}
	for i := range cfg.Video {
		t := &localTrack{id: "video", streamID: publishStreamID, codec: vp8Codec}
		if i < len(cfg.RIDs) {
			t.rid = cfg.RIDs[i]
		}
		c.video = append(c.video, t)
	}
	c.acked = make([]atomic.Bool, len(c.video)+1)
	c.rtxSeq = make([]uint16, len(c.video))
	return c
}

var (
	opusCodec = webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeOpus, ClockRate: 48000, Channels: 2}
	vp8Codec  = webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeVP8, ClockRate: videoClockRate}
)

// AddTracks implements client.Publisher: audio, then video with its simulcast
// encodings (one RTPSender, an encoding per RID).
func (c *pubConn) AddTracks(pc *webrtc.PeerConnection) error {
	sendonly := webrtc.RTPTransceiverInit{Direction: webrtc.RTPTransceiverDirectionSendonly}
	if c.audio != nil {
		tr, err := pc.AddTransceiverFromTrack(c.audio, sendonly)
		if err != nil {
			return err
		}
		c.audioTr = tr
	}
	if len(c.video) > 0 {
		tr, err := pc.AddTransceiverFromTrack(c.video[0], sendonly)
		if err != nil {
			return err
		}
		for _, t := range c.video[1:] {
			if err := tr.Sender().AddEncoding(t); err != nil {
				return err
			}
		}
		c.videoTr = tr
	}
	return nil
}

// Negotiated implements client.Publisher: learn the extension ids, start reading
// RTCP, and hand the connection to the sender loop.
func (c *pubConn) Negotiated() {
	if c.negotiated.Swap(true) {
		return
	}
	var ext extIDs
	for _, tr := range []*webrtc.RTPTransceiver{c.audioTr, c.videoTr} {
		if tr == nil {
			continue
		}
		for _, h := range tr.Sender().GetParameters().HeaderExtensions {
			switch h.URI {
			case client.AudioLevelURI:
				ext.level = uint8(h.ID)
			case sdp.SDESMidURI:
				ext.mid = uint8(h.ID)
			case sdp.SDESRTPStreamIDURI:
				ext.rid = uint8(h.ID)
			case sdp.SDESRepairRTPStreamIDURI:
				ext.rrid = uint8(h.ID)
			}
		}
	}
	if c.audioTr != nil {
		ext.audioMid = c.audioTr.Mid()
		c.readRTCP(audioStream, c.audioTr.Sender(), "")
	}
	if c.videoTr != nil {
		ext.videoMid = c.videoTr.Mid()
		for i, t := range c.video {
			c.readRTCP(i, c.videoTr.Sender(), t.rid)
		}
	}
	c.snd.post(func(src *source) {
		c.ext = ext
		src.bind(c)
	})
}

// readRTCP reads one stream's RTCP until the connection closes: keyframe
// requests and NACKs go to the sender loop, receiver reports acknowledge the
// stream.
func (c *pubConn) readRTCP(stream int, s *webrtc.RTPSender, rid string) {
	c.readers.Add(1)
	go func() {
		defer c.readers.Done()
		buf := make([]byte, 1500)
		for {
			var n int
			var err error
			if rid == "" {
				n, _, err = s.Read(buf)
			} else {
				n, _, err = s.ReadSimulcast(buf, rid)
			}
			if err != nil {
				return
			}
			pkts, err := rtcp.Unmarshal(buf[:n])
			if err != nil {
				continue
			}
			c.handleRTCP(stream, pkts)
		}
	}()
}

func (c *pubConn) streamSSRC(stream int) uint32 {
	t := c.audio
	if stream >= 0 {
		t = c.video[stream]
	}
	if b := t.binding.Load(); b != nil {
		return b.ssrc
	}
	return 0
}

func (c *pubConn) handleRTCP(stream int, pkts []rtcp.Packet) {
	ssrc := c.streamSSRC(stream)
	for _, p := range pkts {
		switch p := p.(type) {
		case *rtcp.PictureLossIndication:
			if p.MediaSSRC == ssrc {
				c.snd.post(func(src *source) { src.keyframeRequest(stream) })
			}
		case *rtcp.FullIntraRequest:
			for _, e := range p.FIR {
				if e.SSRC == ssrc {
					c.snd.post(func(src *source) { src.keyframeRequest(stream) })
				}
			}
		case *rtcp.TransportLayerNack:
			if p.MediaSSRC != ssrc {
				continue
			}
			var seqs []uint16
			for _, pair := range p.Nacks {
				seqs = append(seqs, pair.PacketList()...)
			}
			c.snd.post(func(src *source) { src.nack(stream, seqs, time.Now()) })
		case *rtcp.ReceiverReport:
			for _, r := range p.Reports {
				if r.SSRC == ssrc {
					c.acked[stream+1].Store(true)
				}
			}
		}
	}
}

// writeRTP implements packetWriter: our SSRC and payload type, the audio level,
// and the mid and rid extensions until the SFU has reported on the stream (as
// browsers do); retransmissions as RTX with the original sequence number first.
func (c *pubConn) writeRTP(stream int, p *outPacket) error {
	t := c.audio
	if stream >= 0 {
		t = c.video[stream]
	}
	b := t.binding.Load()
	if b == nil {
		return errNoCodec
	}
	h := &c.hdr
	*h = rtp.Header{Version: 2, Marker: p.Marker, PayloadType: b.pt, SequenceNumber: p.Seq, Timestamp: p.TS, SSRC: b.ssrc, Extensions: h.Extensions[:0]}
	payload := p.Payload
	rtx := p.RTX && b.rtxSSRC != 0
	if rtx {
		payload = c.rtxPayload[:2+len(p.Payload)]
		binary.BigEndian.PutUint16(payload, p.Seq)
		copy(payload[2:], p.Payload)
		h.SSRC, h.PayloadType, h.SequenceNumber = b.rtxSSRC, b.rtxPT, c.rtxSeq[stream]
		c.rtxSeq[stream]++
	}
	if p.Level >= 0 && c.ext.level != 0 {
		_ = h.SetExtension(c.ext.level, []byte{byte(p.Level) & 0x7f})
	}
	if !c.acked[stream+1].Load() || rtx {
		if stream >= 0 {
			if c.ext.mid != 0 {
				_ = h.SetExtension(c.ext.mid, []byte(c.ext.videoMid))
			}
			if t.rid != "" {
				if rtx && c.ext.rrid != 0 {
					_ = h.SetExtension(c.ext.rrid, []byte(t.rid))
				} else if !rtx && c.ext.rid != 0 {
					_ = h.SetExtension(c.ext.rid, []byte(t.rid))
				}
			}
		}
	}
	_, err := b.writer.WriteRTP(h, payload)
	return err
}

// close waits for the RTCP readers (the connection must be closed first).
func (c *pubConn) close() { c.readers.Wait() }

// sender is the loop that owns a participant's source: it sends what is due,
// and runs the changes posted by signaling and RTCP readers in between.
type sender struct {
	src     *source
	events  chan func(*source)
	dropped atomic.Uint64 // events lost because the loop was behind
	done    chan struct{}
	wg      sync.WaitGroup
}

func newSender(src *source) *sender {
	s := &sender{src: src, events: make(chan func(*source), 256), done: make(chan struct{})}
	s.wg.Add(1)
	go func() { defer s.wg.Done(); s.run() }()
	return s
}

// post queues a change for the loop; it never blocks.
func (s *sender) post(f func(*source)) {
	select {
	case s.events <- f:
	default:
		s.dropped.Add(1)
	}
}

func (s *sender) run() {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		s.src.tick(time.Now())
		timer.Reset(time.Until(s.src.next()))
		select {
		case <-s.done:
			return
		case f := <-s.events:
			f(s.src)
			for len(s.events) > 0 {
				(<-s.events)(s.src)
			}
		case <-timer.C:
		}
	}
}

func (s *sender) stop() {
	close(s.done)
	s.wg.Wait()
}
