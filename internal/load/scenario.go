package load

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/podium-sfu/podium/internal/clip"
)

// Video modes of a participant.
const (
	VideoNone      = ""
	VideoSingle    = "single"    // one VP8 encoding (by default 360p, 500 kb/s)
	VideoSimulcast = "simulcast" // three VP8 encodings q/h/f: 180p, 360p, 720p
)

// SimulcastRIDs are the encodings' names, lowest first (docs/protocol.md).
var SimulcastRIDs = []string{"q", "h", "f"}

// View is how a participant shows the others' videos, sent as its constraints
// (zero: it sends none, and the SFU treats every video as a thumbnail).
type View struct {
	Width, Height int
	Role          string // "stage" or "thumbnail"
}

// ParticipantSpec describes one synthetic participant.
type ParticipantSpec struct {
	Name  string
	Audio bool
	Video string
	// Clips overrides the video clips (clip package names), lowest first: one
	// for VideoSingle, three for VideoSimulcast.
	Clips []string
	View  View
	// Room, when set, is appended to the run's room name: the participant
	// joins that room (Replicate's copies of a scenario).
	Room string
	// URL, when set, is the signaling WebSocket this participant joins at
	// instead of the run's (participants spread over a cluster's bridges).
	URL string
	// Delay, when positive, holds every media datagram the participant sends
	// and receives this long: its one-way delay to its bridge (WAN emulation).
	Delay time.Duration
}

func (s ParticipantSpec) sourceConfig(dtx bool) (sourceConfig, error) {
	var cfg sourceConfig
	if s.Audio {
		var err error
		if cfg.Speech, err = clip.LoadAudio(clip.Speech); err != nil {
			return cfg, err
		}
		if cfg.Noise, err = clip.LoadAudio(clip.Noise); err != nil {
			return cfg, err
		}
		cfg.DTX = dtx
	}
	names := s.Clips
	switch s.Video {
	case VideoNone:
		return cfg, nil
	case VideoSingle:
		if names == nil {
			names = []string{clip.Video360p}
		}
		if len(names) != 1 {
			return cfg, fmt.Errorf("%s: single-layer video takes one clip, not %d", s.Name, len(names))
		}
	case VideoSimulcast:
		if names == nil {
			names = []string{clip.Video180p, clip.Video360p, clip.Video720p}
		}
		if len(names) != len(SimulcastRIDs) {
			return cfg, fmt.Errorf("%s: simulcast takes %d clips, not %d", s.Name, len(SimulcastRIDs), len(names))
		}
		cfg.RIDs = SimulcastRIDs
	default:
		return cfg, fmt.Errorf("%s: unknown video mode %q", s.Name, s.Video)
	}
	for _, n := range names {
		v, err := clip.LoadVideo(n)
		if err != nil {
			return cfg, err
		}
		cfg.Video = append(cfg.Video, v)
	}
	return cfg, nil
}

// Scenario is a standard load: who takes part and how they speak.
type Scenario struct {
	Name         string
	Participants []ParticipantSpec
	Speech       string
	DTX          bool
}

// Standard scenario names.
const (
	Meeting8   = "meeting-8"
	Fanout50   = "fanout-50"
	Audio10x50 = "audio-10x50"
)

// Scenarios lists the standard scenarios' names.
func Scenarios() []string { return []string{Meeting8, Fanout50, Audio10x50} }

// StandardScenario returns a standard scenario:
//
//   - meeting-8: 8 participants, each publishing Opus and 3-layer VP8 simulcast and
//     showing the 7 others in a 3x3 grid of 640x360 tiles (so receiving 360p);
//   - fanout-50: 1 publisher (Opus, 720p simulcast), 50 receivers showing it at
//     1280x720 (the top layer);
//   - audio-10x50: 10 audio publishers and 50 audio-only receivers.
//
// Everyone speaks in the realistic pattern, with Opus sending every 20 ms (no DTX).
func StandardScenario(name string) (Scenario, error) {
	grid := View{Width: 640, Height: 360, Role: "thumbnail"}
	stage := View{Width: 1280, Height: 720, Role: "stage"}
	s := Scenario{Name: name, Speech: SpeechRealistic}
	switch name {
	case Meeting8:
		s.Participants = Group("m", 8, ParticipantSpec{Audio: true, Video: VideoSimulcast, View: grid})
	case Fanout50:
		s.Participants = append(Group("pub", 1, ParticipantSpec{Audio: true, Video: VideoSimulcast, View: stage}),
			Group("r", 50, ParticipantSpec{View: stage})...)
	case Audio10x50:
		s.Participants = append(Group("a", 10, ParticipantSpec{Audio: true}), Group("l", 50, ParticipantSpec{})...)
	default:
		return s, fmt.Errorf("unknown scenario %q (want one of %s)", name, strings.Join(Scenarios(), ", "))
	}
	return s, nil
}

// Group makes n participants like spec, named prefix-1 … prefix-n.
func Group(prefix string, n int, spec ParticipantSpec) []ParticipantSpec {
	out := make([]ParticipantSpec, n)
	for i := range out {
		out[i] = spec
		out[i].Clips = slices.Clone(spec.Clips)
		out[i].Name = fmt.Sprintf("%s-%d", prefix, i+1)
	}
	return out
}

// Replicate is k copies of a scenario, each in its own room (the run's room
// name with "-1" … "-k" appended), participants renamed NAME.1 … NAME.k: a
// load k times the scenario's, whose figures per packet stay comparable.
func Replicate(s Scenario, k int) Scenario {
	if k <= 1 {
		return s
	}
	out := Scenario{Name: fmt.Sprintf("%s-x%d", s.Name, k), Speech: s.Speech, DTX: s.DTX}
	for i := 1; i <= k; i++ {
		for _, p := range s.Participants {
			p.Clips = slices.Clone(p.Clips)
			p.Name = fmt.Sprintf("%s.%d", p.Name, i)
			p.Room = fmt.Sprintf("%s-%d", p.Room, i)
			out.Participants = append(out.Participants, p)
		}
	}
	return out
}

// Expectation is what a scenario promises one receiver from one source: a
// stream of that kind, and for video the encoding of that frame height.
type Expectation struct {
	Receiver, Source string
	Kind             string // "audio" or "video"
	Height           int    // video: the encoding's frame height
}

// Expected lists, for every participant, what it must receive when the
// scenario holds: every other participant's audio, and every other
// participant's video in the encoding its view asks for (the one of the view's
// height: 360p in a grid of 640x360 tiles, 720p on a 1280x720 stage).
func (s Scenario) Expected() []Expectation {
	var out []Expectation
	for _, r := range s.Participants {
		for _, src := range s.Participants {
			if src.Name == r.Name || src.Room != r.Room {
				continue
			}
			if src.Audio {
				out = append(out, Expectation{Receiver: r.Name, Source: src.Name, Kind: "audio"})
			}
			if src.Video != VideoNone && r.View.Height > 0 {
				out = append(out, Expectation{Receiver: r.Name, Source: src.Name, Kind: "video", Height: r.View.Height})
			}
		}
	}
	return out
}

// Nominal is what the SFU forwards when the scenario holds, counted as the
// SFU's meter counts it (a 12-byte RTP header plus the payload): every
// Expected stream at its source's sending rate. Video comes from the clip of
// the expected encoding, cut into packets as the publishers cut it; audio is
// 50 packets/s of audioPayload bytes on average (the mean payload the
// publishers sent, which depends on who spoke).
func (s Scenario) Nominal(audioPayload float64) (packetsPerS, bitsPerS float64, err error) {
	specs := map[string]ParticipantSpec{}
	for _, p := range s.Participants {
		specs[p.Name] = p
	}
	for _, e := range s.Expected() {
		if e.Kind == "audio" {
			pps := float64(time.Second / audioFrame)
			packetsPerS += pps
			bitsPerS += pps * (rtpHeaderLen + audioPayload) * 8
			continue
		}
		cfg, err := specs[e.Source].sourceConfig(false)
		if err != nil {
			return 0, 0, err
		}
		var v *clip.Video
		for _, c := range cfg.Video {
			if c.Height == e.Height {
				v = c
			}
		}
		if v == nil {
			return 0, 0, fmt.Errorf("%s sends no %dp encoding for %s", e.Source, e.Height, e.Receiver)
		}
		pps, bps := VideoRate(v)
		packetsPerS += pps
		bitsPerS += bps
	}
	return packetsPerS, bitsPerS, nil
}

// rtpHeaderLen is the fixed RTP header the SFU's meter counts per packet.
const rtpHeaderLen = 12

// VideoRate is a clip's packets and bits per second as the publishers send it
// (Packets), with a 12-byte RTP header per packet.
func VideoRate(v *clip.Video) (packetsPerS, bitsPerS float64) {
	var packets, bytes int
	for _, f := range v.Frames {
		for _, l := range Packets(len(f.Data)) {
			packets++
			bytes += rtpHeaderLen + l
		}
	}
	sec := float64(len(v.Frames)) * v.FrameDuration.Seconds()
	if sec <= 0 {
		return 0, 0
	}
	return float64(packets) / sec, float64(bytes) * 8 / sec
}

// Packets is how the publishers cut a frame of n bytes: the RTP payload sizes
// (VP8 descriptor included), split evenly below 1,200 bytes.
func Packets(n int) []int {
	chunk := maxPayload - vp8DescriptorLen
	k := (n + chunk - 1) / chunk
	if k == 0 {
		return nil
	}
	out := make([]int, k)
	size, extra := n/k, n%k
	for i := range out {
		out[i] = vp8DescriptorLen + size
		if i < extra {
			out[i]++
		}
	}
	return out
}

// VideoClip is the clip this participant sends as its encoding of the given
// frame height (nil when it sends none).
func (s ParticipantSpec) VideoClip(height int) (*clip.Video, error) {
	cfg, err := s.sourceConfig(false)
	if err != nil {
		return nil, err
	}
	for _, c := range cfg.Video {
		if c.Height == height {
			return c, nil
		}
	}
	return nil, nil
}
