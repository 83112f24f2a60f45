package media

// VP8Descriptor is the VP8 payload descriptor (RFC 7741 section 4.2):
//
//	     0 1 2 3 4 5 6 7
//	    +-+-+-+-+-+-+-+-+
//	    |X|R|N|S|R| PID |  required
//	    +-+-+-+-+-+-+-+-+
//	X:  |I|L|T|K| RSV   |
//	    +-+-+-+-+-+-+-+-+
//	I:  |M| PictureID   |  M=1: 15-bit picture id in two bytes
//	    +-+-+-+-+-+-+-+-+
//	    |   PictureID   |
//	    +-+-+-+-+-+-+-+-+
//	L:  |   TL0PICIDX   |
//	    +-+-+-+-+-+-+-+-+
//	T/K:|TID|Y| KEYIDX  |
//	    +-+-+-+-+-+-+-+-+
//
// Fields whose presence bit is clear are zero.
type VP8Descriptor struct {
	Extended     bool  // X
	NonReference bool  // N: the frame can be dropped without harming others
	Start        bool  // S: a VP8 partition starts in this packet
	PartitionID  uint8 // PID

	HasPictureID bool // I
	HasTL0PICIDX bool // L
	HasTID       bool // T
	HasKEYIDX    bool // K

	PictureID     uint16
	PictureIDBits uint8 // 7 or 15 when present; rewriting wraps at this width
	TL0PICIDX     uint8
	TID           uint8
	LayerSync     bool // Y
	KEYIDX        uint8

	HeaderLen int // descriptor length; the VP8 payload starts here

	keyframe bool
}

// ParseVP8 parses the VP8 payload descriptor at the start of an RTP payload.
// An empty VP8 payload after the descriptor is accepted.
func ParseVP8(payload []byte, d *VP8Descriptor) error {
	l, err := vp8Layout(payload)
	if err != nil {
		return err
	}
	b := payload
	*d = VP8Descriptor{
		Extended:     b[0]&0x80 != 0,
		NonReference: b[0]&0x20 != 0,
		Start:        b[0]&0x10 != 0,
		PartitionID:  b[0] & 0x07,
		HeaderLen:    l.end,
	}
	if d.Extended {
		d.HasPictureID = b[1]&0x80 != 0
		d.HasTL0PICIDX = b[1]&0x40 != 0
		d.HasTID = b[1]&0x20 != 0
		d.HasKEYIDX = b[1]&0x10 != 0
	}
	switch l.pidLen {
	case 1:
		d.PictureID, d.PictureIDBits = uint16(b[l.pid]), 7
	case 2:
		d.PictureID, d.PictureIDBits = uint16(b[l.pid]&0x7f)<<8|uint16(b[l.pid+1]), 15
	}
	if l.tl0 > 0 {
		d.TL0PICIDX = b[l.tl0]
	}
	if d.HasTID {
		d.TID, d.LayerSync = b[l.tk]>>6, b[l.tk]&0x20 != 0
	}
	if d.HasKEYIDX {
		d.KEYIDX = b[l.tk] & 0x1f
	}
	// The first byte of a frame is the VP8 frame tag; its low bit P is 0
	// for a key frame (RFC 6386 section 9.1).
	d.keyframe = d.Start && d.PartitionID == 0 && l.end < len(b) && b[l.end]&0x01 == 0
	return nil
}

// IsKeyframe reports whether the packet starts a VP8 key frame: S=1, PID=0
// and the frame tag's P bit clear at the start of the first partition.
func (d *VP8Descriptor) IsKeyframe() bool { return d.keyframe }

// vp8Fields locates the optional descriptor fields; an offset of 0 means
// the field is absent (no optional field can start at byte 0).
type vp8Fields struct {
	pid, pidLen int
	tl0         int
	tk          int
	end         int
}

// vp8Layout finds where each descriptor field lies, checking bounds. It is
// shared by the parser and the in-place writers so both read the packet's
// own presence bits.
func vp8Layout(b []byte) (vp8Fields, error) {
	var l vp8Fields
	if len(b) < 1 {
		return l, ErrShortPacket
	}
	l.end = 1
	if b[0]&0x80 == 0 {
		return l, nil
	}
	if len(b) < 2 {
		return l, ErrShortPacket
	}
	x := b[1]
	l.end = 2
	if x&0x80 != 0 {
		if len(b) <= l.end {
			return l, ErrShortPacket
		}
		l.pid, l.pidLen = l.end, 1
		if b[l.end]&0x80 != 0 {
			l.pidLen = 2
		}
		l.end += l.pidLen
	}
	if x&0x40 != 0 {
		l.tl0 = l.end
		l.end++
	}
	if x&0x30 != 0 {
		l.tk = l.end
		l.end++
	}
	if len(b) < l.end {
		return l, ErrShortPacket
	}
	return l, nil
}
