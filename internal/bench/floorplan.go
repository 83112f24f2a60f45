package bench

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/podium-sfu/podium/internal/clip"
	"github.com/podium-sfu/podium/internal/load"
)

// The floor replays a scenario's egress pattern from a minimal forwarder
// (floorfwd_linux.go). FloorPlan is the pattern, pure: which streams exist,
// who receives each, and which frames are due by a time since the replay
// started. Its streams are the ones the scenario's receivers expect
// (load.Scenario.Expected): each source's audio, each source's video in the
// encoding its receivers show, with the clips the load generator publishes,
// at the same frame rate, and the audio following the same speech pattern.

// FloorPayload is the RTP payload of a full floor packet: frames are cut into
// packets of this size with the remainder last, which UDP GSO sends as one
// datagram train (equal segments, a smaller last one).
const FloorPayload = 1200

// FloorPackets cuts a VP8 frame of n bytes as the floor does: as many packets
// as the load generator cuts it into (each with its 6-byte VP8 descriptor, so
// the same bytes on the wire), full ones of FloorPayload bytes and the
// remainder last.
func FloorPackets(n int) []int {
	payloads := load.Packets(n)
	total := 0
	for _, p := range payloads {
		total += p
	}
	out := payloads[:0]
	for total > 0 {
		l := min(total, FloorPayload)
		out = append(out, l)
		total -= l
	}
	return out
}

// FloorStream is one stream of the replay.
type FloorStream struct {
	Source string
	Kind   string // "audio" or "video"
	Height int    // video: the encoding's frame height
	SSRC   uint32 // index + 1
	Dests  []int  // indexes into FloorPlan.Receivers
	Period time.Duration

	phase   time.Duration
	slot    int64 // next frame slot
	video   *clip.Video
	pos     int // next clip frame (video) or packet (audio)
	speaker int // audio: index in the speech pattern
}

// FloorPlan is a scenario's egress pattern.
type FloorPlan struct {
	Receivers []string // every participant that receives something
	Streams   []*FloorStream

	speech        load.Speech
	speaking      []bool
	speechClip    *clip.Audio
	noise         *clip.Audio
	sizes         []int // scratch for Due
	speakersBySrc map[string]int
}

// NewFloorPlan makes the plan of a scenario; seed sets each stream's phase and
// starting point in its clip.
func NewFloorPlan(sc load.Scenario, seed uint64) (*FloorPlan, error) {
	p := &FloorPlan{speakersBySrc: map[string]int{}}
	var err error
	if p.speechClip, err = clip.LoadAudio(clip.Speech); err != nil {
		return nil, err
	}
	if p.noise, err = clip.LoadAudio(clip.Noise); err != nil {
		return nil, err
	}
	specs := map[string]load.ParticipantSpec{}
	for _, s := range sc.Participants {
		specs[s.Name] = s
		if s.Audio { // the speech pattern's speakers, in spec order as in a load run
			p.speakersBySrc[s.Name] = len(p.speakersBySrc)
		}
	}
	if p.speech, err = load.NewSpeech(sc.Speech, len(p.speakersBySrc), seed); err != nil {
		return nil, err
	}
	p.speaking = make([]bool, len(p.speakersBySrc))
	rng := rand.New(rand.NewPCG(seed, 0xf1002))
	recvIndex := map[string]int{}
	type key struct {
		src, kind string
		height    int
	}
	streams := map[key]*FloorStream{}
	for _, e := range sc.Expected() {
		ri, ok := recvIndex[e.Receiver]
		if !ok {
			ri = len(p.Receivers)
			recvIndex[e.Receiver] = ri
			p.Receivers = append(p.Receivers, e.Receiver)
		}
		k := key{e.Source, e.Kind, e.Height}
		s := streams[k]
		if s == nil {
			s = &FloorStream{Source: e.Source, Kind: e.Kind, Height: e.Height, SSRC: uint32(len(p.Streams) + 1)}
			if e.Kind == "audio" {
				s.Period = 20 * time.Millisecond
				s.speaker = p.speakersBySrc[e.Source]
				s.pos = rng.IntN(1 << 16)
			} else {
				v, err := specs[e.Source].VideoClip(e.Height)
				if err != nil {
					return nil, err
				}
				if v == nil {
					return nil, fmt.Errorf("%s sends no %dp encoding", e.Source, e.Height)
				}
				s.video, s.Period = v, v.FrameDuration
				s.pos = v.NextKey(rng.IntN(len(v.Frames))) // a new stream starts with a keyframe
			}
			s.phase = time.Duration(rng.Int64N(int64(s.Period)))
			streams[k] = s
			p.Streams = append(p.Streams, s)
		}
		s.Dests = append(s.Dests, ri)
	}
	return p, nil
}

// Due calls emit, in time order per stream, for every frame due by now (time
// since the replay started) and not emitted before, with the RTP payload sizes
// of its packets (valid only during the call).
func (p *FloorPlan) Due(now time.Duration, emit func(stream int, payloads []int)) {
	p.speech.Advance(now, func(i int, on bool) { p.speaking[i] = on })
	for i, s := range p.Streams {
		for s.phase+time.Duration(s.slot)*s.Period <= now {
			s.slot++
			p.sizes = p.sizes[:0]
			if s.video != nil {
				f := s.video.Frames[s.pos]
				s.pos = (s.pos + 1) % len(s.video.Frames)
				p.sizes = append(p.sizes, FloorPackets(len(f.Data))...)
			} else {
				c := p.noise
				if p.speaking[s.speaker] {
					c = p.speechClip
				}
				p.sizes = append(p.sizes, len(c.Packets[s.pos%len(c.Packets)]))
				s.pos++
			}
			emit(i, p.sizes)
		}
	}
}
