package room

import (
	"time"

	"github.com/podium-sfu/podium/internal/algo/overload"
)

// Settings are a room's policy.
type Settings struct {
	// E2EERequired refuses joins that do not announce end-to-end encryption
	// (ErrE2EERequired); participants already in the room stay.
	E2EERequired bool
	// NoP2P keeps two participants alone in the room on the SFU; without it
	// they connect directly (p2p.go).
	NoP2P bool
	// LastN is the most videos each receiver gets; -1 means unlimited.
	LastN int
	// VideoPausing tells senders whose video nobody receives to stop sending it.
	VideoPausing bool
	// PauseGrace is how long after it starts publishing video a sender is never
	// paused (with VideoPausing).
	PauseGrace time.Duration
	// AudioSlots is how many speakers' audio a receiver that plays audio
	// slots gets (audioslots.go); 0: every microphone on a track of its own.
	AudioSlots int
	// Shed is the overload controller's ceiling (overload.go); nil: none.
	Shed *overload.Cap
}

// NewSenderGrace is the PauseGrace of servers: a browser's congestion control
// probes the uplink in its first second of media, and a sender paused from the
// start probes nothing, then creeps up at 8 % a second. Measured on loopback:
// 0.3–0.5 Mb/s ten seconds after joining, too little for its 720p encoding,
// against 5.5 Mb/s half a second after joining when not paused.
const NewSenderGrace = 3 * time.Second

// DefaultSettings are the thesis' practical defaults.
func DefaultSettings() Settings {
	return Settings{LastN: 8, VideoPausing: true, PauseGrace: NewSenderGrace}
}

// effectiveN is what a receiver asking for want (-1 = as many as allowed) gets in a
// room allowing roomN (-1 = unlimited); -1 in the result means unlimited.
func effectiveN(roomN, want int) int {
	switch {
	case want < 0:
		return roomN
	case roomN < 0:
		return want
	default:
		return min(roomN, want)
	}
}
