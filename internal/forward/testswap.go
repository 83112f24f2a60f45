package forward

// Relabel sends d under another source's name (track and stream id). TEST ONLY:
// the room's deliberately broken mode (room/testswap.go) uses it; call it
// before the track is added to the receiver's connection.
func (d *DownTrack) Relabel(source string) {
	d.id = d.up.Kind().String() + "-" + source
	d.streamID = source
}
