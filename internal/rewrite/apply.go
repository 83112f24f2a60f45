package rewrite

import (
	"encoding/binary"

	"github.com/podium-sfu/podium/internal/media"
)

// Apply writes out into pkt, the packet hdr was parsed from: marker,
// sequence number and timestamp in the RTP header, and the VP8 picture id,
// TL0PICIDX and KEYIDX where the descriptor has those fields (a 7-bit
// picture id gets the low 7 bits). The SSRC is left to the caller. It checks
// the descriptor before writing anything, so on error pkt is unchanged; the
// errors are media's sentinels, unwrapped, to keep the path allocation free.
func Apply(pkt []byte, hdr *media.RTPHeader, out Output) error {
	if len(pkt) < 12 || hdr.PayloadOffset < 12 || hdr.PayloadOffset >= hdr.PayloadEnd || hdr.PayloadEnd > len(pkt) {
		return media.ErrShortPacket
	}
	if err := ApplyPayload(pkt[hdr.PayloadOffset:hdr.PayloadEnd], out); err != nil {
		return err
	}
	if out.Marker {
		pkt[1] |= 0x80
	} else {
		pkt[1] &^= 0x80
	}
	binary.BigEndian.PutUint16(pkt[2:], out.SequenceNumber)
	binary.BigEndian.PutUint32(pkt[4:], out.Timestamp)
	return nil
}

// VP8DescriptorMax is the most bytes ApplyPayload writes, all at the start
// of the payload: a caller that rewrites a shared packet saves them first.
const VP8DescriptorMax = 6

// ApplyPayload writes out's VP8 picture id, TL0PICIDX and KEYIDX into the
// descriptor at the start of payload, where it has those fields, and nothing
// else; on error payload is unchanged.
func ApplyPayload(payload []byte, out Output) error {
	if len(payload) == 0 {
		return media.ErrShortPacket
	}
	if payload[0]&0x80 != 0 {
		if len(payload) < 2 {
			return media.ErrShortPacket
		}
		// Each writer checks the whole descriptor first, so if the first
		// write succeeds the others can only succeed too.
		x := payload[1]
		if x&0x80 != 0 {
			if err := media.SetVP8PictureID(payload, out.PictureID); err != nil {
				return err
			}
		}
		if x&0x40 != 0 {
			if err := media.SetVP8TL0PICIDX(payload, out.TL0PICIDX); err != nil {
				return err
			}
		}
		if x&0x10 != 0 {
			if err := media.SetVP8KEYIDX(payload, out.KEYIDX); err != nil {
				return err
			}
		}
	}
	return nil
}
