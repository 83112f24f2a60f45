package client

import (
	"sync"
	"time"

	"github.com/pion/rtp"
	"github.com/pion/webrtc/v4"
	"github.com/pion/webrtc/v4/pkg/media"

	"github.com/podium-sfu/podium/internal/signal"
)

// Media sends synthetic Opus-sized audio every 20 ms and VP8-shaped video at 30 fps,
// with a keyframe every 3 s and on every keyframe request from the SFU.
type Media struct {
	audio, video *webrtc.TrackLocalStaticSample
	keyframe     chan struct{}
	done         chan struct{}
	wg           sync.WaitGroup
}

func (c *Client) publish() error {
	audio, err := webrtc.NewTrackLocalStaticSample(webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeOpus, ClockRate: 48000, Channels: 2}, "audio", "local")
	if err != nil {
		return err
	}
	video, err := webrtc.NewTrackLocalStaticSample(webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeVP8, ClockRate: 90000}, "video", "local")
	if err != nil {
		return err
	}
	m := &Media{audio: audio, video: video, keyframe: make(chan struct{}, 1), done: make(chan struct{})}
	c.media = m
	for _, t := range []*webrtc.TrackLocalStaticSample{audio, video} {
		sender, err := c.pub.AddTransceiverFromTrack(t, webrtc.RTPTransceiverInit{Direction: webrtc.RTPTransceiverDirectionSendonly})
		if err != nil {
			return err
		}
		m.wg.Add(1)
		go func(s *webrtc.RTPSender) { defer m.wg.Done(); m.readRTCP(s) }(sender.Sender())
	}
	offer, err := c.pub.CreateOffer(nil)
	if err != nil {
		return err
	}
	if err := c.pub.SetLocalDescription(offer); err != nil {
		return err
	}
	if err := c.Send(signal.TypeOffer, signal.SDP{PC: signal.PCPublish, SDP: offer.SDP}); err != nil {
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
				select {
				case m.keyframe <- struct{}{}:
				default:
				}
			}
		}
	}
}

func (m *Media) sendAudio() {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	frame := make([]byte, 80)
	for {
		select {
		case <-m.done:
			return
		case <-tick.C:
			_ = m.audio.WriteSample(media.Sample{Data: frame, Duration: 20 * time.Millisecond})
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
			frame := delta
			if !time.Now().Before(next) {
				frame = key
				next = time.Now().Add(3 * time.Second)
			}
			_ = m.video.WriteSample(media.Sample{Data: frame, Duration: time.Second / 30})
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

// onTrack counts what arrives on a forwarded track.
func (c *Client) onTrack(track *webrtc.TrackRemote, _ *webrtc.RTPReceiver) {
	id := track.ID()
	source := track.StreamID()
	kind := track.Kind().String()
	c.update(func(s *State) { s.Tracks[id] = &TrackStats{Source: source, Kind: kind, FirstSeen: time.Now()} })
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
