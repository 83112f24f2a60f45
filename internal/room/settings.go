package room

// Settings are a room's Last N policy.
type Settings struct {
	// LastN is the most videos each receiver gets; -1 means unlimited.
	LastN int
	// VideoPausing tells senders whose video nobody receives to stop sending it.
	VideoPausing bool
}

// DefaultSettings are the thesis' practical defaults.
func DefaultSettings() Settings { return Settings{LastN: 8, VideoPausing: true} }

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
