package media

// The writers below renumber VP8 descriptor fields in place, for simulcast
// switching where each receiver must see one continuous picture id,
// TL0PICIDX and KEYIDX sequence. They re-read the packet's own presence bits
// rather than trusting an earlier parse. A field can only be rewritten where
// the sender included it: the descriptor is never resized.

// SetVP8PictureID writes pid into the picture id field of the VP8 payload,
// truncated to the field's width (7 or 15 bits, see
// VP8Descriptor.PictureIDBits): picture ids wrap at that width anyway.
func SetVP8PictureID(payload []byte, pid uint16) error {
	l, err := vp8Layout(payload)
	if err != nil {
		return err
	}
	switch l.pidLen {
	case 1:
		payload[l.pid] = uint8(pid & 0x7f)
	case 2:
		payload[l.pid] = 0x80 | uint8(pid>>8&0x7f)
		payload[l.pid+1] = uint8(pid)
	default:
		return ErrFieldAbsent
	}
	return nil
}

// SetVP8TL0PICIDX writes the temporal level zero index of the VP8 payload.
func SetVP8TL0PICIDX(payload []byte, v uint8) error {
	l, err := vp8Layout(payload)
	if err != nil {
		return err
	}
	if l.tl0 == 0 {
		return ErrFieldAbsent
	}
	payload[l.tl0] = v
	return nil
}

// SetVP8KEYIDX writes the 5-bit key frame index of the VP8 payload (v is
// truncated to 5 bits), keeping TID and Y.
func SetVP8KEYIDX(payload []byte, v uint8) error {
	l, err := vp8Layout(payload)
	if err != nil {
		return err
	}
	if l.tk == 0 || payload[1]&0x10 == 0 {
		return ErrFieldAbsent
	}
	payload[l.tk] = payload[l.tk]&0xe0 | v&0x1f
	return nil
}
