// Package whipclient is a WHIP publisher and a WHEP player on pion, for tests
// and for trying a server by hand: the publisher sends one of internal/clip's
// VP8 clips and an Opus clip with RFC 6464 levels, the player counts what the
// stage sends (docs/broadcast.md).
package whipclient

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/rtp"
	"github.com/pion/webrtc/v4"
	"github.com/pion/webrtc/v4/pkg/media"

	"github.com/podium-sfu/podium/internal/client"
	"github.com/podium-sfu/podium/internal/clip"
)

// exchange POSTs a complete offer (candidates gathered) to endpoint and
// applies the answer; it returns the resource URL.
func exchange(ctx context.Context, pc *webrtc.PeerConnection, endpoint, token string) (string, error) {
	offer, err := pc.CreateOffer(nil)
	if err != nil {
		return "", err
	}
	gathered := webrtc.GatheringCompletePromise(pc)
	if err := pc.SetLocalDescription(offer); err != nil {
		return "", err
	}
	select {
	case <-gathered:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(pc.LocalDescription().SDP))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/sdp")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusCreated {
		return "", fmt.Errorf("%s: %s: %s", endpoint, resp.Status, bytes.TrimSpace(body))
	}
	loc, err := resp.Location()
	if err != nil {
		return "", fmt.Errorf("%s: 201 without a Location: %w", endpoint, err)
	}
	if err := pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeAnswer, SDP: string(body)}); err != nil {
		return "", err
	}
	return loc.String(), nil
}

// remove DELETEs a resource.
func remove(ctx context.Context, resource string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, resource, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusNoContent {
		return fmt.Errorf("DELETE %s: %s", resource, resp.Status)
	}
	return nil
}

// Publisher is a WHIP client sending a clip.
type Publisher struct {
	Resource string // the Location the server gave
	pc       *webrtc.PeerConnection
	video    *webrtc.TrackLocalStaticSample
	audio    *webrtc.TrackLocalStaticRTP
	asender  *webrtc.RTPSender
	keyframe chan struct{}
	done     chan struct{}
	wg       sync.WaitGroup
	speaking atomic.Bool
	// KeyframeRequests counts the PLIs and FIRs the server sent.
	KeyframeRequests atomic.Uint64
}

// Publish joins the room of endpoint (http://host/whip/<room>) and sends the
// video clip and silence (SetSpeaking for speech).
func Publish(ctx context.Context, endpoint, token string, video *clip.Video) (*Publisher, error) {
	api, err := client.NewAPI()
	if err != nil {
		return nil, err
	}
	pc, err := api.NewPeerConnection(webrtc.Configuration{})
	if err != nil {
		return nil, err
	}
	p := &Publisher{pc: pc, keyframe: make(chan struct{}, 1), done: make(chan struct{})}
	if p.audio, err = webrtc.NewTrackLocalStaticRTP(webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeOpus, ClockRate: 48000, Channels: 2}, "audio", "whip"); err != nil {
		return nil, err
	}
	if p.video, err = webrtc.NewTrackLocalStaticSample(webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeVP8, ClockRate: 90000}, "video", "whip"); err != nil {
		return nil, err
	}
	for _, t := range []webrtc.TrackLocal{p.audio, p.video} {
		tr, err := pc.AddTransceiverFromTrack(t, webrtc.RTPTransceiverInit{Direction: webrtc.RTPTransceiverDirectionSendonly})
		if err != nil {
			_ = pc.Close()
			return nil, err
		}
		if t == webrtc.TrackLocal(p.audio) {
			p.asender = tr.Sender()
		}
		p.wg.Add(1)
		go func(s *webrtc.RTPSender) { defer p.wg.Done(); p.readRTCP(s) }(tr.Sender())
	}
	if p.Resource, err = exchange(ctx, pc, endpoint, token); err != nil {
		p.stop()
		return nil, err
	}
	speech, err := clip.LoadAudio(clip.Speech)
	if err != nil {
		p.stop()
		return nil, err
	}
	noise, err := clip.LoadAudio(clip.Noise)
	if err != nil {
		p.stop()
		return nil, err
	}
	p.wg.Add(2)
	go func() { defer p.wg.Done(); p.sendVideo(video) }()
	go func() { defer p.wg.Done(); p.sendAudio(speech, noise) }()
	return p, nil
}

// SetSpeaking switches the audio between the speech clip and room noise.
func (p *Publisher) SetSpeaking(on bool) { p.speaking.Store(on) }

func (p *Publisher) readRTCP(s *webrtc.RTPSender) {
	for {
		pkts, _, err := s.ReadRTCP()
		if err != nil {
			return
		}
		for _, pkt := range pkts {
			switch pkt.(type) {
			case *rtcp.PictureLossIndication, *rtcp.FullIntraRequest:
				p.KeyframeRequests.Add(1)
				select {
				case p.keyframe <- struct{}{}:
				default:
				}
			}
		}
	}
}

// sendVideo loops the clip in real time, jumping to its next keyframe when
// the server asks for one.
func (p *Publisher) sendVideo(v *clip.Video) {
	tick := time.NewTicker(v.FrameDuration)
	defer tick.Stop()
	i := 0
	for {
		select {
		case <-p.done:
			return
		case <-p.keyframe:
			i = v.NextKey(i)
		case <-tick.C:
			f := v.Frames[i%len(v.Frames)]
			_ = p.video.WriteSample(media.Sample{Data: f.Data, Duration: v.FrameDuration})
			i++
		}
	}
}

// sendAudio sends 20 ms Opus packets with their RFC 6464 levels.
func (p *Publisher) sendAudio(speech, noise *clip.Audio) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	ext := uint8(0)
	for _, x := range p.asender.GetParameters().HeaderExtensions {
		if x.URI == client.AudioLevelURI {
			ext = uint8(x.ID)
		}
	}
	pkt := &rtp.Packet{Header: rtp.Header{Version: 2}}
	for i := 0; ; i++ {
		select {
		case <-p.done:
			return
		case <-tick.C:
		}
		a := noise
		if p.speaking.Load() {
			a = speech
		}
		pkt.Payload = a.Packets[i%len(a.Packets)]
		pkt.Header.Extension, pkt.Header.Extensions = false, nil
		if ext != 0 {
			_ = pkt.Header.SetExtension(ext, []byte{a.Level(i)})
		}
		pkt.SequenceNumber++
		pkt.Timestamp += 960
		_ = p.audio.WriteRTP(pkt)
	}
}

func (p *Publisher) stop() {
	select {
	case <-p.done:
	default:
		close(p.done)
	}
	_ = p.pc.Close()
	p.wg.Wait()
}

// Close DELETEs the resource and closes the connection.
func (p *Publisher) Close(ctx context.Context) error {
	err := remove(ctx, p.Resource)
	p.stop()
	return err
}
