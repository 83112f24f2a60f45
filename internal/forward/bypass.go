package forward

// SetBypassed stops (on) or resumes forwarding this source to its receiver,
// audio and video alike, because the receiver gets it directly from the
// sender (hybrid P2P, docs/p2p.md). Unlike SetSelected it also holds audio, and
// it leaves the selection policy's verdict alone: video resumes at the next
// keyframe, as after a suspension.
func (d *DownTrack) SetBypassed(on bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.bypassed.Load() == on {
		return
	}
	d.bypassed.Store(on)
	d.retargetLocked()
}

// Bypassed reports whether the receiver gets this source peer to peer.
func (d *DownTrack) Bypassed() bool { return d.bypassed.Load() }
