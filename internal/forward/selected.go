package forward

// Selected reports whether the selection policy currently forwards this video.
func (d *DownTrack) Selected() bool { return d.selected.Load() }
