package client

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/rtp"
	"github.com/pion/webrtc/v4"
	"github.com/pion/webrtc/v4/pkg/media"

	"github.com/podium-sfu/podium/internal/signal"
)

// Media sends synthetic Opus-sized audio every 20 ms and VP8-shaped video at 30 fps,
// with a keyframe every 3 s and on every keyframe request from the SFU.
type Media struct {
	audio    *webrtc.TrackLocalStaticRTP
	video    *webrtc.TrackLocalStaticSample
	keyframe chan struct{}
	done     chan struct{}
	wg       sync.WaitGroup

	mu               sync.Mutex // guards audioSender: publish sets it, the signaling reader reads it
	audioSender      *webrtc.RTPSender
	levelExt         atomic.Uint32 // negotiated RFC 6464 extension id (0 until known)
	speaking         atomic.Bool   // send speech-like levels instead of silence
	paused           atomic.Bool   // the SFU asked us to stop sending video
	sentVideo        atomic.Uint64
	keyframeRequests atomic.Uint64 // PLI/FIR received from the SFU
}

func (c *Client) publish() error {
	audio, err := webrtc.NewTrackLocalStaticRTP(webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeOpus, ClockRate: 48000, Channels: 2}, "audio", "local")
	if err != nil {
		return err
	}
	video, err := webrtc.NewTrackLocalStaticSample(webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeVP8, ClockRate: 90000}, "video", "local")
	if err != nil {
		return err
	}
	m := c.media
	m.audio, m.video = audio, video
	for _, t := range []webrtc.TrackLocal{audio, video} {
		sender, err := c.pub.AddTransceiverFromTrack(t, webrtc.RTPTransceiverInit{Direction: webrtc.RTPTransceiverDirectionSendonly})
		if err != nil {
			return err
		}
		if t == webrtc.TrackLocal(audio) {
			m.mu.Lock()
			m.audioSender = sender.Sender()
			m.mu.Unlock()
		}
		m.wg.Add(1)
		go func(s *webrtc.RTPSender) { defer m.wg.Done(); m.readRTCP(s) }(sender.Sender())
	}
	if err := c.offerPublish(); err != nil {
		return err
	}
	m.wg.Add(2)
	go func() { defer m.wg.Done(); m.sendAudio() }()
	go func() { defer m.wg.Done(); m.sendVideo() }()
	return nil
}

func (m *Media) readRTCP(s *webrtc.RTPSender) {
	for {
		pkts, _, err := s.ReadRTCP()
		if err != nil {
			return
		}
		for _, p := range pkts {
			if isKeyframeRequest(p) {
				m.keyframeRequests.Add(1)
				select {
				case m.keyframe <- struct{}{}:
				default:
				}
			}
		}
	}
}

// sendAudio sends a 20 ms Opus-sized packet with an RFC 6464 level: speech-like
// syllables while speaking (about 200 ms on, 80 ms off), a microphone's background
// noise otherwise.
func (m *Media) sendAudio() {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	pkt := &rtp.Packet{Header: rtp.Header{Version: 2, SSRC: 1}, Payload: make([]byte, 80)}
	var n int
	for {
		select {
		case <-m.done:
			return
		case <-tick.C:
			n++
			level := uint8(88 + n%5) // room noise, about -90 dBov
			if m.speaking.Load() && n%14 < 10 {
				level = uint8(20 + (n*7)%25) // syllables between -20 and -45 dBov
			}
			pkt.Header.Extension, pkt.Header.Extensions = false, nil
			if id := m.levelExt.Load(); id != 0 {
				_ = pkt.Header.SetExtension(uint8(id), []byte{level})
			}
			pkt.SequenceNumber++
			pkt.Timestamp += 960
			_ = m.audio.WriteRTP(pkt)
		}
	}
}

// VP8 frames whose first payload byte has the P bit clear are keyframes (RFC 6386
// frame tag); the SFU needs nothing more to recognise them.
func (m *Media) sendVideo() {
	tick := time.NewTicker(time.Second / 30)
	defer tick.Stop()
	key := make([]byte, 6000)
	key[0] = 0x10
	delta := make([]byte, 1200)
	delta[0] = 0x11
	next := time.Now()
	for {
		select {
		case <-m.done:
			return
		case <-m.keyframe:
			next = time.Now()
		case <-tick.C:
			if m.paused.Load() {
				continue
			}
			m.sentVideo.Add(1)
			frame := delta
			if !time.Now().Before(next) {
				frame = key
				next = time.Now().Add(3 * time.Second)
			}
			_ = m.video.WriteSample(media.Sample{Data: frame, Duration: time.Second / 30})
		}
	}
}

// answered learns the negotiated extension ids once the SFU answered our offer.
func (m *Media) answered() {
	m.mu.Lock()
	sender := m.audioSender
	m.mu.Unlock()
	if sender == nil {
		return
	}
	for _, ext := range sender.GetParameters().HeaderExtensions {
		if ext.URI == AudioLevelURI {
			m.levelExt.Store(uint32(ext.ID))
		}
	}
}

func (m *Media) stop() {
	select {
	case <-m.done:
	default:
		close(m.done)
	}
	m.wg.Wait()
}

// publishWith offers the tracks of p on the publish connection.
func (c *Client) publishWith(p Publisher) error {
	if err := p.AddTracks(c.pub); err != nil {
		return err
	}
	return c.offerPublish()
}

func (c *Client) offerPublish() error {
	offer, err := c.pub.CreateOffer(nil)
	if err != nil {
		return err
	}
	if err := c.pub.SetLocalDescription(offer); err != nil {
		return err
	}
	return c.Send(signal.TypeOffer, signal.SDP{PC: signal.PCPublish, SDP: offer.SDP})
}

// onTrack counts what arrives on a forwarded track (or hands it to Options.OnTrack).
func (c *Client) onTrack(track *webrtc.TrackRemote, receiver *webrtc.RTPReceiver) {
	id := track.ID()
	source := track.StreamID()
	kind := track.Kind().String()
	c.update(func(s *State) { s.Tracks[id] = &TrackStats{Source: source, Kind: kind, FirstSeen: time.Now()} })
	if read := c.opts.OnTrack; read != nil {
		c.wg.Add(1)
		go func() { defer c.wg.Done(); read(track, receiver) }()
		return
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		var p rtp.Packet
		buf := make([]byte, 1500)
		for {
			n, _, err := track.Read(buf)
			if err != nil {
				return
			}
			if p.Unmarshal(buf[:n]) != nil {
				continue
			}
			key := kind == "video" && isVP8KeyframeStart(p.Payload)
			c.mu.Lock()
			if st := c.state.Tracks[id]; st != nil && st.Source == source {
				st.observeSeq(p.SequenceNumber)
				st.Packets++
				st.Bytes += n
				st.LastSeen = time.Now()
				if key {
					st.Keyframes++
				}
			}
			c.mu.Unlock()
		}
	}()
}
