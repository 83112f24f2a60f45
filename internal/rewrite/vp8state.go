package rewrite

// frameWindowSize is how many frames behind the newest one a late packet's
// frame is still known (about a second at 30 fps). It must stay below 64 so
// 7-bit picture ids unwrap unambiguously. A power of two.
const frameWindowSize = 32

// pidMask keeps output picture ids at 15 bits; a 7-bit field takes the low
// bits, which also count up by one per frame.
const pidMask = 0x7fff

// maxTID is the largest VP8 temporal layer id (two bits).
const maxTID = 3

// frameSlot is the decision for one input frame, so that all its packets,
// late ones included, share it.
type frameSlot struct {
	tsOffset uint32 // timestamp offset in force for the frame
	out      uint16 // output picture id
	state    slotState
	layers   uint8 // for a missing frame: the temporal layers forwarded when it was passed over
}

// frameClass classifies a picture id against the window.
type frameClass uint8

const (
	frameNew       frameClass = iota // newer than any frame seen
	frameMissing                     // passed over, first packet now
	frameForwarded                   // decided: forward
	frameDropped                     // decided: drop
	frameStale                       // before the segment or behind the window
)

// frameWindow maps the input picture ids of one segment to continuous output
// ones, the way seqWindow maps sequence numbers: a dropped frame shifts the
// later ones down, a frame never seen keeps a reserved id.
type frameWindow struct {
	on      bool   // the segment's key frame carried a picture id
	highest int64  // extended picture id of the newest frame
	base    int64  // the segment's first frame
	offset  uint16 // output minus input for the next new frame
	slots   [frameWindowSize]frameSlot
}

// reset starts a segment whose first frame, pid, becomes out.
func (w *frameWindow) reset(pid, out uint16) {
	w.on = true
	w.base = int64(pid)
	w.highest = w.base - 1
	w.offset = out - pid
}

// classify extends pid, a field of the given width (7 or 15 bits).
func (w *frameWindow) classify(pid uint16, bits uint8) (int64, frameClass) {
	ext := unwrap(w.highest, uint32(pid), uint(bits))
	switch {
	case ext > w.highest:
		return ext, frameNew
	case ext < w.base || ext <= w.highest-frameWindowSize:
		return ext, frameStale
	}
	switch w.slots[ext&(frameWindowSize-1)].state {
	case slotMissing:
		return ext, frameMissing
	case slotForwarded:
		return ext, frameForwarded
	}
	return ext, frameDropped
}

// advance makes ext the newest frame, reserving the ids of the frames it
// skipped together with the state they would be judged by if they turn up.
func (w *frameWindow) advance(ext int64, layers uint8, tsOffset uint32) {
	from := max(w.highest+1, ext-frameWindowSize+1)
	for i := from; i < ext; i++ {
		w.slots[i&(frameWindowSize-1)] = frameSlot{
			tsOffset: tsOffset,
			out:      (uint16(i) + w.offset) & pidMask,
			state:    slotMissing,
			layers:   layers,
		}
	}
	w.highest = ext
}

// next returns the output picture id the next new frame would get: past
// the newest forwarded frame and any ids reserved after it.
func (w *frameWindow) next() uint16 {
	return (uint16(w.highest+1) + w.offset) & pidMask
}

// slot returns the record of frame ext, which must be inside the window.
func (w *frameWindow) slot(ext int64) *frameSlot {
	return &w.slots[ext&(frameWindowSize-1)]
}

// forwardNew records ext, the newest frame, as forwarded.
func (w *frameWindow) forwardNew(ext int64, tsOffset uint32) *frameSlot {
	s := w.slot(ext)
	*s = frameSlot{tsOffset: tsOffset, out: (uint16(ext) + w.offset) & pidMask, state: slotForwarded}
	return s
}

// dropNew records ext, the newest frame, as dropped: later frames move down.
func (w *frameWindow) dropNew(ext int64) {
	w.slot(ext).state = slotDropped
	w.offset--
}

// temporal is the temporal layer filter. Dropping layers is always safe;
// adding layer n back needs a frame of layer n with the layer sync bit (it
// references only TL0) or a key frame, one layer at a time, because a
// non-sync frame of layer n may reference earlier frames of layers 1..n.
type temporal struct {
	target  uint8 // highest layer wanted
	current uint8 // highest layer forwarded
}

// admit updates the filter at the start of a new frame and reports whether
// the frame is forwarded. Frames without a TID are TL0.
func (t *temporal) admit(tid uint8, sync, keyframe bool) bool {
	if keyframe {
		t.current = t.target
		return true
	}
	if t.current > t.target {
		t.current = t.target
	}
	if sync && tid == t.current+1 && tid <= t.target {
		t.current = tid
	}
	return tid <= t.current
}
