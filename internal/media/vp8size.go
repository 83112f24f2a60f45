package media

import "encoding/binary"

// VP8KeyframeSize reads the frame size from the uncompressed header that starts a
// VP8 keyframe (RFC 6386 section 9.1): 3-byte frame tag, start code 9d 01 2a, then
// 14-bit width and height. payload is the RTP payload d was parsed from. ok is false
// for anything but the first packet of a keyframe with a valid start code.
func VP8KeyframeSize(payload []byte, d *VP8Descriptor) (width, height int, ok bool) {
	if !d.IsKeyframe() || len(payload) < d.HeaderLen+10 {
		return 0, 0, false
	}
	b := payload[d.HeaderLen:]
	if b[3] != 0x9d || b[4] != 0x01 || b[5] != 0x2a {
		return 0, 0, false
	}
	width = int(binary.LittleEndian.Uint16(b[6:]) & 0x3fff)
	height = int(binary.LittleEndian.Uint16(b[8:]) & 0x3fff)
	return width, height, width > 0 && height > 0
}
