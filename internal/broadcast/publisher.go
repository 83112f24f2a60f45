package broadcast

import (
	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/forward"
	"github.com/podium-sfu/podium/internal/peer"
	"github.com/podium-sfu/podium/internal/room"
)

// publisher is a WHIP client in a room: a participant that publishes and
// receives nothing (its permissions lack subscribe, so the room sends it no
// tracks). Its tracks are UpTracks like a browser's.
type publisher struct {
	endpoint
	meter *forward.Meter
}

// Send implements room.Member. A WHIP client has no signaling channel: what the
// room tells it (pause video, simulcast layers) has nowhere to go, and the SFU
// drops on arrival what nobody needs.
func (p *publisher) Send(string, any) {}

// AddDownTrack implements room.Member; never called without subscribe.
func (p *publisher) AddDownTrack(*forward.DownTrack) {}

// RemoveDownTrack implements room.Member.
func (p *publisher) RemoveDownTrack(*forward.DownTrack) {}

// onTrack runs on a pion goroutine when a track's media starts arriving: as
// session.onTrack does, it makes an UpTrack and publishes it in the room.
func (p *publisher) onTrack(track *webrtc.TrackRemote, receiver *webrtc.RTPReceiver) {
	params := peer.UpTrackParams(p.pc, track, receiver)
	params.Source, params.Encoding, params.Meter = p.id, room.EncodingIndex(track.RID()), p.meter
	up := forward.NewUpTrack(params)
	p.goTrack(func() { peer.ReadFeedback(up, track, receiver) })
	p.goTrack(func() {
		p.room.Publish(p, up)
		up.Run()
		p.room.Unpublish(p, up)
	})
}
