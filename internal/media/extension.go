package media

// FindExtension returns the payload of the first RFC 8285 header extension
// element with the given id in b, the packet h was parsed from. Ids run
// 1..14 with the one-byte profile and 1..255 with the two-byte profile;
// other profiles have no elements. The result aliases b.
//
// It trusts neither b nor h: a header that does not match b yields false.
func FindExtension(b []byte, h *RTPHeader, id uint8) ([]byte, bool) {
	if !h.Extension || id == 0 || h.ExtensionOffset < 0 || h.ExtensionLen < 0 ||
		h.ExtensionOffset > len(b) || h.ExtensionLen > len(b)-h.ExtensionOffset {
		return nil, false
	}
	block := b[h.ExtensionOffset : h.ExtensionOffset+h.ExtensionLen]
	payload, ok, err := walkExtensions(block, h.ExtensionProfile, id)
	return payload, ok && err == nil
}

// walkExtensions scans an RFC 8285 extension block for element id, or, with
// id 0, only checks that every element fits. Non-RFC 8285 profiles are
// opaque and always valid.
//
// It follows RFC 8285 section 4.2: a zero byte is padding, and with the
// one-byte profile id 15 ends processing. Like pion/rtp, an id 0 with a
// non-zero length (reserved) also ends processing.
func walkExtensions(block []byte, profile uint16, id uint8) ([]byte, bool, error) {
	oneByte := profile == ProfileOneByte
	if !oneByte && profile&profileTwoByteMask != ProfileTwoByte {
		return nil, false, nil
	}
	for i := 0; i < len(block); {
		if block[i] == 0 {
			i++
			continue
		}
		var elemID uint8
		var n int
		if oneByte {
			elemID, n = block[i]>>4, int(block[i]&0x0f)+1
			if elemID == 15 || elemID == 0 {
				return nil, false, nil
			}
			i++
		} else {
			if i+1 >= len(block) {
				return nil, false, ErrBadExtension
			}
			elemID, n = block[i], int(block[i+1])
			i += 2
		}
		if n > len(block)-i {
			return nil, false, ErrBadExtension
		}
		if elemID == id {
			return block[i : i+n : i+n], true, nil
		}
		i += n
	}
	return nil, false, nil
}
