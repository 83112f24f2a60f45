package media

// VP8DescriptorLen is the length PutVP8Descriptor writes for d.
func VP8DescriptorLen(d *VP8Descriptor) int {
	n := 1
	if !d.Extended {
		return n
	}
	n++
	if d.HasPictureID {
		n++
		if d.PictureIDBits == 15 {
			n++
		}
	}
	if d.HasTL0PICIDX {
		n++
	}
	if d.HasTID || d.HasKEYIDX {
		n++
	}
	return n
}

// PutVP8Descriptor writes d as a VP8 payload descriptor at the start of b (a
// packetizer's job; RFC 7741 section 4.2) and returns its length. The optional
// fields are written when Extended and their presence flags are set; the picture
// id takes two bytes when PictureIDBits is 15, else one. d.HeaderLen is ignored.
func PutVP8Descriptor(b []byte, d *VP8Descriptor) (int, error) {
	n := VP8DescriptorLen(d)
	if len(b) < n {
		return 0, ErrShortPacket
	}
	b[0] = d.PartitionID & 0x07
	if d.NonReference {
		b[0] |= 0x20
	}
	if d.Start {
		b[0] |= 0x10
	}
	if !d.Extended {
		return n, nil
	}
	b[0] |= 0x80
	b[1] = 0
	i := 2
	if d.HasPictureID {
		b[1] |= 0x80
		if d.PictureIDBits == 15 {
			b[i] = 0x80 | byte(d.PictureID>>8)&0x7f
			b[i+1] = byte(d.PictureID)
			i += 2
		} else {
			b[i] = byte(d.PictureID) & 0x7f
			i++
		}
	}
	if d.HasTL0PICIDX {
		b[1] |= 0x40
		b[i] = d.TL0PICIDX
		i++
	}
	if d.HasTID || d.HasKEYIDX {
		var tk byte
		if d.HasTID {
			b[1] |= 0x20
			tk = d.TID << 6
			if d.LayerSync {
				tk |= 0x20
			}
		}
		if d.HasKEYIDX {
			b[1] |= 0x10
			tk |= d.KEYIDX & 0x1f
		}
		b[i] = tk
	}
	return n, nil
}
