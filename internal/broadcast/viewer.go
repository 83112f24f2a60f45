package broadcast

import (
	"math/rand/v2"
	"sync"
	"time"

	"github.com/pion/interceptor"
	"github.com/pion/rtcp"
	"github.com/pion/rtp"
	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/forward"
	"github.com/podium-sfu/podium/internal/peer"
	"github.com/podium-sfu/podium/internal/signal"
)

// viewer is a WHEP player in a room: a receive-only participant with Last N 1
// whose DownTracks — the room's usual ones, with their keyframe gate, simulcast
// projection and NACK answers — write into the viewer's stage instead of a
// connection, which sends the stage source's video and the dominant speaker's
// audio on one track each.
type viewer struct {
	endpoint
	out [2]*webrtc.TrackLocalStaticRTP // audio, video

	mu      sync.Mutex // guards everything below; DownTracks write under their own lock, then take it
	sw      [2]switcher
	taps    map[*forward.DownTrack]*tap
	sources map[string]bool // sources with video, for the stage constraints
	kick    chan struct{}   // a source was added: send the constraints again
	pkt     rtp.Packet      // scratch for writes
	buf     []byte
}

const (
	audioSlot = 0
	videoSlot = 1
)

func newViewer() (*viewer, error) {
	v := &viewer{taps: map[*forward.DownTrack]*tap{}, sources: map[string]bool{}, buf: make([]byte, 1500), kick: make(chan struct{}, 1)}
	var err error
	if v.out[audioSlot], err = webrtc.NewTrackLocalStaticRTP(webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeOpus, ClockRate: 48000, Channels: 2}, "audio-stage", "stage"); err != nil {
		return nil, err
	}
	if v.out[videoSlot], err = webrtc.NewTrackLocalStaticRTP(webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeVP8, ClockRate: 90000}, "video-stage", "stage"); err != nil {
		return nil, err
	}
	v.sw[audioSlot] = switcher{clock: 48000}
	v.sw[videoSlot] = switcher{video: true, clock: 90000}
	return v, nil
}

// addTracks puts the two stage tracks on the connection and reads the
// player's RTCP for them.
func (v *viewer) addTracks() error {
	for slot, t := range v.out {
		sender, err := v.pc.AddTrack(t)
		if err != nil {
			return err
		}
		slot := slot
		v.goTrack(func() { v.readRTCP(slot, sender) })
	}
	return nil
}

// Send implements room.Member: the stage follows the room's forwarded set
// (Last N 1: pins, screen share, dominant speaker) and its speaker.
func (v *viewer) Send(typ string, body any) {
	v.mu.Lock()
	defer v.mu.Unlock()
	switch typ {
	case signal.TypeForwarded:
		var ids []string
		switch f := body.(type) {
		case signal.Forwarded:
			ids = f.IDs
		case *signal.Forwarded:
			ids = f.IDs
		}
		if len(ids) > 0 {
			v.sw[videoSlot].want = ids[0]
		}
	case signal.TypeSpeaker:
		switch sp := body.(type) {
		case signal.Speaker:
			v.sw[audioSlot].want = sp.ID
		case *signal.Speaker:
			v.sw[audioSlot].want = sp.ID
		}
	}
}

// AddDownTrack implements room.Member: the DownTrack is bound to a tap of the
// stage at once (no negotiation), so it runs on the room's loop and must not block.
func (v *viewer) AddDownTrack(d *forward.DownTrack) {
	slot := audioSlot
	codec := webrtc.RTPCodecParameters{RTPCodecCapability: webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeOpus, ClockRate: 48000, Channels: 2}, PayloadType: peer.PayloadTypeOpus}
	if d.Kind() == webrtc.RTPCodecTypeVideo {
		slot = videoSlot
		codec = webrtc.RTPCodecParameters{RTPCodecCapability: webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeVP8, ClockRate: 90000}, PayloadType: peer.PayloadTypeVP8}
	}
	t := &tap{v: v, slot: slot, source: d.StreamID(), ssrc: webrtc.SSRC(rand.Uint32()), codec: codec}
	if _, err := d.Bind(t); err != nil {
		v.log.Warn("stage: bind", "err", err)
		return
	}
	v.mu.Lock()
	v.taps[d] = t
	added := slot == videoSlot && !v.sources[t.source]
	v.sources[t.source] = v.sources[t.source] || slot == videoSlot
	v.mu.Unlock()
	if added {
		select { // the room's calls are synchronous: constrain from another goroutine
		case v.kick <- struct{}{}:
		default:
		}
	}
}

// constrain asks the room for every source's video at stage size whenever
// one is added, until the viewer ends; start it once the viewer is in the room.
func (v *viewer) constrain() {
	for {
		select {
		case <-v.ctx.Done():
			return
		case <-v.kick:
		}
		v.mu.Lock()
		c := v.constraintsLocked()
		v.mu.Unlock()
		v.room.SetConstraints(v, c)
	}
}

// constraintsLocked asks for every video as the stage shows it: large.
func (v *viewer) constraintsLocked() map[string]signal.VideoConstraint {
	c := make(map[string]signal.VideoConstraint, len(v.sources))
	for s := range v.sources {
		c[s] = signal.VideoConstraint{Role: "stage"}
	}
	return c
}

// RemoveDownTrack implements room.Member.
func (v *viewer) RemoveDownTrack(d *forward.DownTrack) {
	v.mu.Lock()
	t, ok := v.taps[d]
	delete(v.taps, d)
	v.mu.Unlock()
	if ok {
		_ = d.Unbind(t)
	}
}

// write is a tap's packet: forwarded on the stage track when its source is live.
func (v *viewer) write(t *tap, h *rtp.Header, payload []byte) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(payload) > len(v.buf) {
		return
	}
	v.pkt.Header = *h
	v.pkt.Header.Extension, v.pkt.Header.Extensions = false, nil
	v.pkt.Payload = v.buf[:copy(v.buf, payload)]
	if !v.sw[t.slot].next(time.Now(), t.source, &v.pkt.Header, v.pkt.Payload) {
		return
	}
	_ = v.out[t.slot].WriteRTP(&v.pkt)
}

// liveTap is the tap of the slot's live source (nil: none).
func (v *viewer) liveTapLocked(slot int) (*forward.DownTrack, *tap) {
	live := v.sw[slot].live
	for d, t := range v.taps {
		if t.slot == slot && t.source == live {
			return d, t
		}
	}
	return nil, nil
}

// readRTCP hands the player's keyframe requests and NACKs to the live
// source's DownTrack, in its numbering: it asks the publisher for a keyframe
// and resends from the source's store, as for any receiver.
func (v *viewer) readRTCP(slot int, sender *webrtc.RTPSender) {
	for {
		pkts, _, err := sender.ReadRTCP()
		if err != nil {
			return
		}
		var fwd []rtcp.Packet
		v.mu.Lock()
		d, t := v.liveTapLocked(slot)
		if d != nil {
			for _, p := range pkts {
				switch p := p.(type) {
				case *rtcp.PictureLossIndication, *rtcp.FullIntraRequest:
					fwd = append(fwd, &rtcp.PictureLossIndication{MediaSSRC: uint32(t.ssrc)})
				case *rtcp.TransportLayerNack:
					nack := &rtcp.TransportLayerNack{MediaSSRC: uint32(t.ssrc)}
					for _, pair := range p.Nacks {
						pair.Range(func(seq uint16) bool {
							if _, in, ok := v.sw[slot].source(seq); ok {
								nack.Nacks = append(nack.Nacks, rtcp.NackPair{PacketID: in})
							}
							return true
						})
					}
					if len(nack.Nacks) > 0 {
						fwd = append(fwd, nack)
					}
				}
			}
		}
		v.mu.Unlock()
		if len(fwd) > 0 {
			d.HandleRTCP(time.Now(), fwd) // outside v.mu: a resend writes to the tap
		}
	}
}

// tap is the binding a DownTrack writes into: a webrtc.TrackLocalContext and
// TrackLocalWriter of its own, so the DownTrack works as on any connection.
type tap struct {
	v      *viewer
	slot   int
	source string
	ssrc   webrtc.SSRC
	codec  webrtc.RTPCodecParameters
}

func (t *tap) CodecParameters() []webrtc.RTPCodecParameters {
	return []webrtc.RTPCodecParameters{t.codec}
}
func (t *tap) HeaderExtensions() []webrtc.RTPHeaderExtensionParameter { return nil }
func (t *tap) SSRC() webrtc.SSRC                                      { return t.ssrc }
func (t *tap) SSRCRetransmission() webrtc.SSRC                        { return 0 }
func (t *tap) SSRCForwardErrorCorrection() webrtc.SSRC                { return 0 }
func (t *tap) WriteStream() webrtc.TrackLocalWriter                   { return t }
func (t *tap) ID() string                                             { return t.source }
func (t *tap) RTCPReader() interceptor.RTCPReader                     { return nil }

// WriteRTP implements webrtc.TrackLocalWriter.
func (t *tap) WriteRTP(h *rtp.Header, payload []byte) (int, error) {
	t.v.write(t, h, payload)
	return len(payload), nil
}

// Write implements webrtc.TrackLocalWriter (unused by DownTracks).
func (t *tap) Write(b []byte) (int, error) {
	var p rtp.Packet
	if err := p.Unmarshal(b); err != nil {
		return 0, err
	}
	return t.WriteRTP(&p.Header, p.Payload)
}
