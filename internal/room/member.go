// Package room holds a conference's membership and decides who receives which track.
// Each Room is owned by one goroutine (its loop); everything else talks to it with
// closures queued on that loop, so room state needs no lock.
package room

import (
	"time"

	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/algo/lastn"
	"github.com/podium-sfu/podium/internal/algo/layers"
	"github.com/podium-sfu/podium/internal/forward"
	"github.com/podium-sfu/podium/internal/signal"
)

// Member is a participant's session as the room sees it. Every method must return
// at once: the room loop never waits for a session.
type Member interface {
	ID() string
	// Send queues a signaling message to the client. body is the caller's
	// again once Send returns (the room reuses the stats it sends).
	Send(typ string, body any)
	// AddDownTrack and RemoveDownTrack change what the client receives.
	AddDownTrack(d *forward.DownTrack)
	RemoveDownTrack(d *forward.DownTrack)
	// Replaced tells a session that a resumed session took over its participant id.
	Replaced()
	// RTT is the latest round-trip time of its publish and subscribe connections.
	RTT() (publish, subscribe time.Duration)
	// Remove ends the session for good: a bye with code and reason, then close.
	Remove(code, reason string)
	// Failed ends the session after a bug in the room's handling of what it
	// sent: a fatal internal error, after which the client may reconnect.
	Failed(reason string)
	// Link is its subscribe connection's congestion control; nil when it has
	// none, and then layers follow what it shows, whatever the bandwidth.
	Link() *forward.Link
}

type member struct {
	m     Member
	info  signal.Participant
	ups   []*forward.UpTrack
	downs map[*forward.UpTrack]*forward.DownTrack // what this member receives
	order int                                     // join order, for stable listings

	pinned        []lastn.ID // always receive these, in this order
	wantN         int        // the most videos it asks for; -1 = as many as the room allows
	forwarded     []lastn.ID // the selection last told to the client
	forwardedN    int
	toldForwarded bool
	paused        bool                   // told to stop sending video
	videoSince    time.Time              // when its first video track was published
	layersSent    []string               // simulcast RIDs last told to keep sending
	simulcast     simulcastState         // declared encodings, when each was last needed
	constraints   map[string]layers.Want // how this member shows each source
	bw            bandwidthState         // its layer allocation under its bandwidth estimate

	identity   string             // the token's subject
	perms      signal.Permissions // without Subscribe it is sent no media
	joined     time.Time
	mutedAudio bool        // an administrator muted its audio: dropped at the source
	mutedVideo bool        // ... its video: dropped, and out of everyone's selection
	self       signal.Mute // the mute state its client last announced

	share *member // its screen share while it shares (share.go); nil otherwise
	slots slotSet // its audio slots (audioslots.go); none: a track per microphone

	listed bool // its changes are pushed to everyone (listing.go)
}

// adminMuted reports whether an administrator muted m's media of that kind.
func (m *member) adminMuted(kind webrtc.RTPCodecType) bool {
	if kind == webrtc.RTPCodecTypeAudio {
		return m.mutedAudio
	}
	return m.mutedVideo
}
