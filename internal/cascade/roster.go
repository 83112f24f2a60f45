package cascade

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/forward"
	"github.com/podium-sfu/podium/internal/room"
	"github.com/podium-sfu/podium/internal/signal"
)

// roster is one bridge's participants of one room, published on
// podium.cascade.roster.<room> every rosterEvery and when a room opens.
type roster struct {
	Room string `json:"room"`
	Node string `json:"node"`
	// Sender is the bridge's relay tag and Addr its relay socket: where
	// feedback goes, and whose datagrams carry the media.
	Sender       uint32              `json:"sender"`
	Addr         string              `json:"addr"`
	Participants []rosterParticipant `json:"participants"`
}

type rosterParticipant struct {
	Info   signal.Participant `json:"info"`
	Tracks []rosterTrack      `json:"tracks,omitempty"`
}

// rosterTrack is one published stream (a simulcast encoding is one).
type rosterTrack struct {
	Stream   uint32                    `json:"stream"` // the origin's relay stream id
	Source   string                    `json:"source"` // the participant, or its screen share
	Kind     string                    `json:"kind"`   // audio, video
	Codec    webrtc.RTPCodecCapability `json:"codec"`
	RID      string                    `json:"rid,omitempty"`
	Encoding int                       `json:"encoding"`
	// The origin's measure of a video encoding (the subscriber gets only
	// those its receivers take, and cannot measure the others).
	Active   bool   `json:"active,omitempty"`
	Bitrate  int    `json:"bitrate,omitempty"`
	Temporal [3]int `json:"temporal,omitzero"`
	Width    int    `json:"width,omitempty"`
	Height   int    `json:"height,omitempty"`
}

// activeWindow is how recently an encoding must have sent to count as on
// (as the room's).
const activeWindow = time.Second

func decodeRoster(b []byte) (roster, error) {
	var r roster
	if err := json.Unmarshal(b, &r); err != nil {
		return r, err
	}
	if !signal.ValidRoom(r.Room) || r.Node == "" {
		return r, errors.New("cascade: bad roster")
	}
	return r, nil
}

// publishRoster tells the other bridges who rm serves here.
func (c *Cascade) publishRoster(now time.Time, rm *room.Room) {
	r := roster{Room: rm.Name(), Node: c.cfg.Node.ID(), Sender: c.cfg.Relay.Keyring().Sender(), Addr: c.addr.Load().String(),
		Participants: []rosterParticipant{}}
	live := map[*forward.UpTrack]bool{}
	for _, l := range rm.Locals() {
		p := rosterParticipant{Info: l.Info}
		for _, up := range l.Ups {
			live[up] = true
			t := rosterTrack{
				Stream: c.origin.streamID(rm.Name(), up), Source: up.Source(), Kind: up.Kind().String(), Codec: up.Codec(),
				RID: up.RID(), Encoding: up.Encoding(),
			}
			if up.Kind() == webrtc.RTPCodecTypeVideo {
				t.Active, t.Bitrate, t.Temporal = up.Active(now, activeWindow), up.Bitrate(now), up.TemporalBitrates(now)
				t.Width, t.Height = up.Size()
			}
			p.Tracks = append(p.Tracks, t)
		}
		r.Participants = append(r.Participants, p)
	}
	c.origin.retain(rm.Name(), live)
	b, err := json.Marshal(r)
	if err != nil {
		return
	}
	_ = c.nc.Publish(rosterSubject+roomToken(r.Room), b)
}
