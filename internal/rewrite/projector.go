package rewrite

import (
	"time"

	"github.com/podium-sfu/podium/internal/media"
)

// MaxEncodings is how many simulcast encodings a source sends (0 = lowest).
const MaxEncodings = 3

// farLimit is how many packets of the forwarded encoding, running on from
// each other (gaps below farStep), may fall far outside its sequence window
// without looking like late packets before the encoding is taken as
// restarted and a key frame is awaited. Stray very late packets do not run
// on from each other, so they are just dropped.
const (
	farLimit = 4
	farStep  = 16
)

// Output holds the values one forwarded packet must carry. SSRC and payload
// type are the caller's.
type Output struct {
	SequenceNumber uint16
	Timestamp      uint32
	PictureID      uint16 // 15 bits; a 7-bit field takes the low 7
	TL0PICIDX      uint8
	KEYIDX         uint8 // 5 bits
	Marker         bool
	// SwitchedTo is the encoding when this packet, a key frame's first,
	// starts a new segment (first start, switch, resume after a pause or
	// stop, or resynchronisation after the source restarted), else -1.
	SwitchedTo int
	// Fill, on a packet not forwarded: it came late and is dropped (its
	// frame's temporal layer is not forwarded, or its frame was dropped),
	// but its number was reserved when it was passed over and later ones
	// went out, so the receiver counts it lost and no NACK can bring it.
	// Send a padding-only packet under SequenceNumber and Timestamp instead.
	Fill bool
}

var noOutput = Output{SwitchedTo: -1}

// Projector is the simulcast projection for one (source, receiver) pair. It
// must be made with NewProjector and used from one goroutine; it holds no
// references to packets and does not allocate.
type Projector struct {
	target  int // wanted encoding, -1 for none
	current int // encoding being forwarded, -1 while waiting for a key frame
	layers  temporal

	seq       seqWindow
	frames    frameWindow
	tsOffset  uint32
	tl0Offset uint8
	keyOffset uint8
	far       int    // far-off packets running on from each other
	farSeq    uint16 // the newest of them

	hasLast bool
	last    lastOutput
	// atFrameEnd: the newest packet taken in order ended a frame, so padding
	// can go between it and the next frame.
	atFrameEnd bool
	// TL0PICIDX and KEYIDX of the newest packet taken in order, forwarded
	// or not: the next segment continues above them, so that no late frame
	// of this one can share its values.
	topTL0, topKey uint8
}

// lastOutput is the forwarded packet with the highest output sequence
// number, which the next segment's timestamps continue from.
type lastOutput struct {
	at  time.Time
	ts  uint32
	seq uint16
	pid uint16
}

// packet is what the projection reads of one input packet.
type packet struct {
	ts       uint32
	seq      uint16
	pid      uint16
	pidBits  uint8
	hasPID   bool
	hasTL0   bool
	hasKEY   bool
	tl0      uint8
	tid      uint8
	sync     bool
	keyidx   uint8
	start    bool // first packet of a frame (S=1, partition 0)
	keyframe bool
	marker   bool
}

// NewProjector returns a projector with no target: it forwards nothing
// until SetTarget names an encoding and that encoding sends a key frame.
func NewProjector() *Projector {
	return &Projector{
		target:  -1,
		current: -1,
		layers:  temporal{target: maxTID},
	}
}

// SetTarget sets the wanted encoding (0 to MaxEncodings-1, or -1 for none:
// forwarding pauses at once) and the highest temporal layer to forward (0
// to 2 for L1T3; higher TIDs are dropped). A different encoding is switched
// to at its next key frame; until then the current one keeps flowing.
func (p *Projector) SetTarget(encoding int, maxTemporal int) {
	if encoding < 0 || encoding >= MaxEncodings {
		encoding = -1
	}
	p.target = encoding
	p.layers.target = uint8(min(max(maxTemporal, 0), maxTID))
	if encoding < 0 {
		p.current = -1
	}
}

// EncodingStopped tells the projector that the source stopped sending
// encoding. If it is the one being forwarded, forwarding stops until a key
// frame of the target arrives.
func (p *Projector) EncodingStopped(encoding int) {
	if encoding >= 0 && encoding == p.current {
		p.current = -1
	}
}

// Current returns the encoding being forwarded, or -1 if none (before the
// first key frame, while paused, or after the current encoding stopped).
func (p *Projector) Current() int { return p.current }

// Temporal returns the highest temporal layer being forwarded.
func (p *Projector) Temporal() int { return int(p.layers.current) }

// WantsKeyframe reports the encoding a key frame is needed from: the
// target, whenever it is not the encoding being forwarded.
func (p *Projector) WantsKeyframe() (encoding int, ok bool) {
	if p.target >= 0 && p.current != p.target {
		return p.target, true
	}
	return -1, false
}

// Project decides whether one received packet of encoding is forwarded and
// with which values. hdr and vp8 are the packet's parsed headers (vp8 may be
// nil for a packet without a descriptor), keyframe whether it is the first
// packet of a key frame, and now its arrival time. Packets must be fed in
// arrival order; late and duplicate ones are handled.
func (p *Projector) Project(now time.Time, encoding int, hdr *media.RTPHeader, vp8 *media.VP8Descriptor, keyframe bool) (out Output, forward bool) {
	if hdr == nil || encoding < 0 || encoding != p.current && encoding != p.target {
		return noOutput, false
	}
	in := readPacket(hdr, vp8, keyframe)
	started := false
	if encoding != p.current {
		if !keyframe {
			return noOutput, false
		}
		p.start(now, encoding, &in)
		started = true
	} else if keyframe && p.restarted(now, &in) {
		p.start(now, encoding, &in)
		started = true
	}
	out, forward = p.project(now, &in)
	if forward && started {
		out.SwitchedTo = encoding
	}
	return out, forward
}

func readPacket(hdr *media.RTPHeader, vp8 *media.VP8Descriptor, keyframe bool) packet {
	in := packet{ts: hdr.Timestamp, seq: hdr.SequenceNumber, marker: hdr.Marker, keyframe: keyframe}
	if vp8 != nil {
		in.hasPID = vp8.HasPictureID && vp8.PictureIDBits != 0
		in.pid, in.pidBits = vp8.PictureID, vp8.PictureIDBits
		in.tl0, in.hasTL0 = vp8.TL0PICIDX, vp8.HasTL0PICIDX
		in.hasKEY = vp8.HasKEYIDX
		if vp8.HasTID {
			in.tid, in.sync = vp8.TID, vp8.LayerSync
		}
		in.keyidx = vp8.KEYIDX
		in.start = vp8.Start && vp8.PartitionID == 0
	}
	return in
}

// start begins a segment at in, the first packet of a key frame of
// encoding, continuing every output counter of the previous segment: the
// sequence number and picture id after the last ones forwarded or reserved
// for late packets, the timestamp by the wall time since the last packet,
// TL0PICIDX and KEYIDX one above the newest seen.
func (p *Projector) start(now time.Time, encoding int, in *packet) {
	p.current = encoding
	p.far = 0
	p.layers.current = p.layers.target
	seq, ts, pid, tl0, key := in.seq, in.ts, in.pid, in.tl0, in.keyidx
	if p.hasLast {
		seq = p.seq.next()
		ts = p.last.ts + advanceBy(now.Sub(p.last.at))
		pid = (p.last.pid + 1) & pidMask
		if p.frames.on {
			pid = p.frames.next()
		}
		tl0 = p.topTL0 + 1
		key = p.topKey + 1
	}
	p.seq.reset(in.seq, seq)
	p.atFrameEnd = false
	p.tsOffset = ts - in.ts
	p.frames.on = false
	if in.hasPID {
		p.frames.reset(in.pid, pid)
	}
	p.tl0Offset = tl0 - in.tl0
	p.keyOffset = key - in.keyidx
}

// restarted reports whether in, a key frame of the current encoding, breaks
// from the segment's numbering: a sequence jump no loss explains, or a
// timestamp jump wall time does not. Starting a new segment there keeps the
// output continuous.
func (p *Projector) restarted(now time.Time, in *packet) bool {
	_, c := p.seq.classify(in.seq)
	switch c {
	case seqJump:
		return true
	case seqTooOld:
		return !tsLooksLate(in.ts+p.tsOffset, p.last.ts)
	case seqInOrder:
		return tsJumped(in.ts+p.tsOffset, p.last.ts, now.Sub(p.last.at))
	}
	return false
}

// project maps a packet of the current segment.
func (p *Projector) project(now time.Time, in *packet) (Output, bool) {
	ext, c := p.seq.classify(in.seq)
	switch c {
	case seqJump, seqTooOld:
		if c == seqTooOld && tsLooksLate(in.ts+p.tsOffset, p.last.ts) {
			return noOutput, false
		}
		// The numbering broke without a key frame to restart at, or a
		// stray packet arrived.
		if d := in.seq - p.farSeq; p.far > 0 && d > 0 && d < farStep {
			p.far++
		} else {
			p.far = 1
		}
		p.farSeq = in.seq
		if p.far >= farLimit {
			p.current = -1
		}
		return noOutput, false
	case seqBeforeBase, seqDuplicate:
		return noOutput, false
	}
	p.far = 0
	inOrder := c == seqInOrder
	if inOrder {
		p.seq.advance(ext)
		if in.hasTL0 {
			p.topTL0 = in.tl0 + p.tl0Offset
		}
		if in.hasKEY {
			p.topKey = (in.keyidx + p.keyOffset) & 0x1f
		}
	}
	forward, pid, tsOffset := p.frame(now, in, inOrder)
	if !forward {
		p.seq.drop(ext, inOrder)
		if !inOrder {
			return Output{SequenceNumber: p.seq.out(ext), Timestamp: in.ts + p.tsOffset, SwitchedTo: -1, Fill: true}, false
		}
		return noOutput, false
	}
	if inOrder {
		p.atFrameEnd = in.marker
	}
	out := Output{
		SequenceNumber: p.seq.forward(ext, inOrder),
		Timestamp:      in.ts + tsOffset,
		PictureID:      pid,
		TL0PICIDX:      in.tl0 + p.tl0Offset,
		KEYIDX:         (in.keyidx + p.keyOffset) & 0x1f,
		Marker:         in.marker,
		SwitchedTo:     -1,
	}
	if inOrder || int16(out.SequenceNumber-p.last.seq) > 0 {
		p.last = lastOutput{at: now, ts: out.Timestamp, seq: out.SequenceNumber, pid: out.PictureID}
		p.hasLast = true
	}
	return out, true
}

// frame decides for the packet's frame, returning whether it is forwarded,
// its output picture id and the timestamp offset that applies to it.
func (p *Projector) frame(now time.Time, in *packet, inOrder bool) (bool, uint16, uint32) {
	if !p.frames.on || !in.hasPID {
		return p.framePacket(now, in, inOrder)
	}
	ext, c := p.frames.classify(in.pid, in.pidBits)
	if c == frameStale && inOrder {
		// Picture ids restarted under continuing sequence numbers.
		p.frames.reset(in.pid, p.frames.next())
		ext, c = p.frames.classify(in.pid, in.pidBits)
	}
	switch c {
	case frameNew:
		// Frames passed over are judged, if they turn up, by the layers
		// in force before this one (lowered to the target, not raised).
		p.frames.advance(ext, min(p.layers.current, p.layers.target), p.tsOffset)
		if !p.layers.admit(in.tid, in.sync, in.keyframe) {
			p.frames.dropNew(ext)
			return false, 0, 0
		}
		if inOrder {
			p.checkTimestamp(now, in)
		}
		s := p.frames.forwardNew(ext, p.tsOffset)
		return true, s.out, s.tsOffset
	case frameMissing:
		s := p.frames.slot(ext)
		if in.tid > s.layers {
			s.state = slotDropped
			return false, 0, 0
		}
		s.state = slotForwarded
		return true, s.out, s.tsOffset
	case frameForwarded:
		s := p.frames.slot(ext)
		return true, s.out, s.tsOffset
	}
	return false, 0, 0
}

// framePacket decides for a packet without a usable picture id: the
// temporal filter moves only at a frame's first packet, and the packet's
// picture id field, if any, is left as it is.
func (p *Projector) framePacket(now time.Time, in *packet, inOrder bool) (bool, uint16, uint32) {
	if inOrder && in.start {
		if !p.layers.admit(in.tid, in.sync, in.keyframe) {
			return false, 0, 0
		}
	} else if in.tid > p.layers.current {
		return false, 0, 0
	}
	if inOrder {
		p.checkTimestamp(now, in)
	}
	return true, in.pid, p.tsOffset
}

// checkTimestamp re-anchors the timestamp offset by wall time if an
// in-order packet's timestamp jumped (a source that paused and restarted its
// clock), so output timestamps keep following wall time.
func (p *Projector) checkTimestamp(now time.Time, in *packet) {
	elapsed := now.Sub(p.last.at)
	if p.hasLast && tsJumped(in.ts+p.tsOffset, p.last.ts, elapsed) {
		p.tsOffset = p.last.ts + advanceBy(elapsed) - in.ts
	}
}

// Padding reserves the next output sequence number for a padding-only packet
// (a bandwidth probe) and returns it with the newest forwarded timestamp. It
// refuses (ok false) before anything was forwarded, and while an encoding is
// forwarded unless its newest packet ended a frame: padding never lands inside
// a frame, where a receiver would take the skipped number for a lost packet of
// it. While forwarding is paused it is always allowed: probing must go on
// when every video is off for lack of bandwidth, or the estimate could never
// climb back. Later packets, and the next segment, continue after the padding.
func (p *Projector) Padding() (seq uint16, ts uint32, ok bool) {
	if !p.hasLast || p.current >= 0 && !p.atFrameEnd {
		return 0, 0, false
	}
	seq = p.seq.next()
	p.seq.offset++
	p.last.seq = seq
	return seq, p.last.ts, true
}
