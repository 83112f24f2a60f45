package rewrite

// seqWindowSize is how many input sequence numbers behind the newest one a
// late packet may arrive and still be mapped (about a second of a 720p
// encoding). A power of two.
const seqWindowSize = 256

// maxSeqJump is the largest forward jump of the input sequence number still
// taken as loss. A larger jump means the source restarted its numbering (or
// an outage long enough that the receiver needs a key frame anyway).
const maxSeqJump = 1000

// slotState records what became of one input sequence number or frame.
type slotState uint8

const (
	// slotMissing: passed over by a newer packet, so lost or still to come;
	// its output slot is reserved.
	slotMissing slotState = iota
	slotForwarded
	slotDropped
)

type seqSlot struct {
	out   uint16
	state slotState
}

// seqClass classifies an input sequence number against the window.
type seqClass uint8

const (
	seqInOrder    seqClass = iota // newer than any seen: maybe after a loss gap
	seqLate                       // a passed-over slot inside the window
	seqDuplicate                  // already forwarded or dropped
	seqBeforeBase                 // from before the segment's first packet
	seqTooOld                     // behind the window
	seqJump                       // too far ahead to be loss
)

// seqWindow maps the input sequence numbers of one segment (one encoding
// between two switches) to output sequence numbers. In order, out = in +
// offset; each in-order packet that is dropped lowers offset by one, so
// dropped packets leave no gap while lost ones (never seen) do. Passed-over
// numbers keep the output they would have had, for late arrivals.
type seqWindow struct {
	highest int64  // extended input sequence number of the newest packet
	base    int64  // the segment's first extended input sequence number
	offset  uint16 // output minus input for the next in-order packet
	slots   [seqWindowSize]seqSlot
}

// reset starts a segment whose first packet, seq, becomes out.
func (w *seqWindow) reset(seq, out uint16) {
	w.base = int64(seq)
	w.highest = w.base - 1
	w.offset = out - seq
}

// classify extends seq and says how it relates to the window.
func (w *seqWindow) classify(seq uint16) (int64, seqClass) {
	ext := unwrap(w.highest, uint32(seq), 16)
	d := ext - w.highest
	switch {
	case d > maxSeqJump:
		return ext, seqJump
	case d > 0:
		return ext, seqInOrder
	case d <= -seqWindowSize:
		return ext, seqTooOld
	case ext < w.base:
		return ext, seqBeforeBase
	}
	if w.slots[ext&(seqWindowSize-1)].state == slotMissing {
		return ext, seqLate
	}
	return ext, seqDuplicate
}

// advance makes ext, an in-order packet, the newest, reserving output slots
// for the numbers it skipped.
func (w *seqWindow) advance(ext int64) {
	from := max(w.highest+1, ext-seqWindowSize+1)
	for i := from; i < ext; i++ {
		w.slots[i&(seqWindowSize-1)] = seqSlot{out: uint16(i) + w.offset, state: slotMissing}
	}
	w.highest = ext
}

// next returns the output sequence number the next in-order packet would
// get: past the newest forwarded one and any slots reserved after it.
func (w *seqWindow) next() uint16 {
	return uint16(w.highest+1) + w.offset
}

// forward records ext as forwarded and returns its output sequence number.
func (w *seqWindow) forward(ext int64, inOrder bool) uint16 {
	s := &w.slots[ext&(seqWindowSize-1)]
	if inOrder {
		s.out = uint16(ext) + w.offset
	}
	s.state = slotForwarded
	return s.out
}

// out is the output sequence number of ext, which must be in the window
// and reserved or forwarded.
func (w *seqWindow) out(ext int64) uint16 { return w.slots[ext&(seqWindowSize-1)].out }

// drop records ext as dropped. An in-order drop shifts the following packets
// down so it leaves no gap; a late one leaves its reserved slot empty.
func (w *seqWindow) drop(ext int64, inOrder bool) {
	w.slots[ext&(seqWindowSize-1)].state = slotDropped
	if inOrder {
		w.offset--
	}
}

// unwrap extends v, a counter of the given width, to the 64-bit value
// nearest to ref.
func unwrap(ref int64, v uint32, bits uint) int64 {
	mod := int64(1) << bits
	d := (int64(v) - ref) & (mod - 1)
	if d >= mod/2 {
		d -= mod
	}
	return ref + d
}
