package whipclient

import (
	"context"
	"sync"
	"time"

	"github.com/pion/rtp"
	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/client"
	pmedia "github.com/podium-sfu/podium/internal/media"
)

// Player is a WHEP client: one recvonly audio and one recvonly video
// transceiver, counting what arrives.
type Player struct {
	Resource string
	pc       *webrtc.PeerConnection
	wg       sync.WaitGroup

	mu    sync.Mutex
	stats PlayerStats
}

// PlayerStats is what a Player received.
type PlayerStats struct {
	Tracks                     int // tracks the server sent (one audio, one video)
	AudioPackets, VideoPackets int
	Keyframes                  int
	// Width and Height are the last keyframe's size: which clip is on stage.
	Width, Height int
	// SeqJumps counts video sequence numbers that did not follow the previous
	// one (loss or a broken rewrite); SSRCs the distinct video SSRCs seen.
	SeqJumps int
	SSRCs    map[uint32]bool
	LastKey  time.Time
}

// Play asks endpoint (http://host/whep/<room>) for the room's stage.
func Play(ctx context.Context, endpoint, token string) (*Player, error) {
	api, err := client.NewAPI()
	if err != nil {
		return nil, err
	}
	pc, err := api.NewPeerConnection(webrtc.Configuration{})
	if err != nil {
		return nil, err
	}
	p := &Player{pc: pc, stats: PlayerStats{SSRCs: map[uint32]bool{}}}
	for _, k := range []webrtc.RTPCodecType{webrtc.RTPCodecTypeAudio, webrtc.RTPCodecTypeVideo} {
		if _, err := pc.AddTransceiverFromKind(k, webrtc.RTPTransceiverInit{Direction: webrtc.RTPTransceiverDirectionRecvonly}); err != nil {
			_ = pc.Close()
			return nil, err
		}
	}
	pc.OnTrack(func(t *webrtc.TrackRemote, _ *webrtc.RTPReceiver) {
		p.mu.Lock()
		p.stats.Tracks++
		p.mu.Unlock()
		p.wg.Add(1)
		go func() { defer p.wg.Done(); p.read(t) }()
	})
	if p.Resource, err = exchange(ctx, pc, endpoint, token); err != nil {
		_ = pc.Close()
		return nil, err
	}
	return p, nil
}

func (p *Player) read(t *webrtc.TrackRemote) {
	video := t.Kind() == webrtc.RTPCodecTypeVideo
	var pkt rtp.Packet
	var d pmedia.VP8Descriptor
	started := false
	var last uint16
	buf := make([]byte, 1500)
	for {
		n, _, err := t.Read(buf)
		if err != nil {
			return
		}
		if pkt.Unmarshal(buf[:n]) != nil {
			continue
		}
		p.mu.Lock()
		if !video {
			p.stats.AudioPackets++
			p.mu.Unlock()
			continue
		}
		p.stats.VideoPackets++
		p.stats.SSRCs[pkt.SSRC] = true
		if started && pkt.SequenceNumber != last+1 {
			p.stats.SeqJumps++
		}
		started, last = true, pkt.SequenceNumber
		if pmedia.ParseVP8(pkt.Payload, &d) == nil && d.Start && d.PartitionID == 0 && d.IsKeyframe() {
			p.stats.Keyframes++
			p.stats.LastKey = time.Now()
			if w, h, ok := pmedia.VP8KeyframeSize(pkt.Payload, &d); ok {
				p.stats.Width, p.stats.Height = w, h
			}
		}
		p.mu.Unlock()
	}
}

// Stats returns a copy of what arrived so far.
func (p *Player) Stats() PlayerStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stats
	s.SSRCs = make(map[uint32]bool, len(p.stats.SSRCs))
	for k := range p.stats.SSRCs {
		s.SSRCs[k] = true
	}
	return s
}

// Close DELETEs the resource and closes the connection.
func (p *Player) Close(ctx context.Context) error {
	err := remove(ctx, p.Resource)
	_ = p.pc.Close()
	p.wg.Wait()
	return err
}
