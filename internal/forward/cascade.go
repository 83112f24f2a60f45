package forward

// What the relay between bridges (internal/cascade) reads of a track.

// Wanted reports whether some destination accepts this encoding now: a
// relayed encoding is asked of its origin bridge only while it is.
func (u *UpTrack) Wanted() bool { return u.wanted() }

// AudioLevelExtID is the negotiated id of the RFC 6464 extension (0: none).
func (u *UpTrack) AudioLevelExtID() uint8 { return u.p.AudioLevelExtID }

// Latest is the newest level pushed, without draining the ring (the room
// drains it for the speaker detector).
func (r *LevelRing) Latest() (AudioLevel, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n == 0 && r.buf[(r.head+levelRingSize-1)%levelRingSize].At.IsZero() {
		return AudioLevel{}, false
	}
	return r.buf[(r.head+levelRingSize-1)%levelRingSize], true
}
