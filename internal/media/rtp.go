package media

import "encoding/binary"

// RTPHeader is the parsed RTP header (RFC 3550 section 5.1) of a decrypted
// packet. It holds offsets into the packet rather than copies, so parsing
// does not allocate; the packet bytes must be kept alongside.
type RTPHeader struct {
	Marker         bool
	PayloadType    uint8
	SequenceNumber uint16
	Timestamp      uint32
	SSRC           uint32
	CSRCCount      uint8 // read them with CSRC

	// Extension is the X bit. ExtensionProfile is the 16-bit profile, and
	// ExtensionOffset/ExtensionLen locate the extension data after the
	// 4-byte extension header (excluding it).
	Extension        bool
	ExtensionProfile uint16
	ExtensionOffset  int
	ExtensionLen     int

	PayloadOffset int   // header length: the payload starts here
	PayloadEnd    int   // the payload ends here, before padding
	PaddingSize   uint8 // 0 when the P bit is clear
}

const rtpFixedLen = 12

// RFC 8285 extension profiles. A two-byte profile is 0x100 followed by four
// application bits, so 0x1000 through 0x100F.
const (
	ProfileOneByte     = 0xBEDE
	ProfileTwoByte     = 0x1000
	profileTwoByteMask = 0xFFF0
)

// ParseRTPHeader parses the RTP header of the decrypted packet b into h:
// the fixed header, CSRC list, header extension block and padding. RFC 8285
// extension blocks are validated element by element, so FindExtension on an
// accepted packet cannot meet a truncated element.
//
// Padding is taken from the last byte, so b must be the whole packet and not
// still SRTP-protected. A padding-only packet (empty payload) is valid.
// On error h is left partly filled and must not be used.
func ParseRTPHeader(b []byte, h *RTPHeader) error {
	if err := parseHeader(b, h); err != nil {
		return err
	}
	if b[0]&0x20 != 0 {
		n := h.PayloadOffset
		if len(b) == n {
			return ErrShortPacket // no room for the padding count
		}
		h.PaddingSize = b[len(b)-1]
		if h.PaddingSize == 0 || int(h.PaddingSize) > len(b)-n {
			return ErrBadPadding
		}
		h.PayloadEnd -= int(h.PaddingSize)
	}
	return nil
}

// ParseSRTPHeader parses the clear-text header of an SRTP-protected packet b
// (RFC 3711 encrypts the payload and padding, and appends the authentication
// tag): the fixed header, CSRC list and header extension block, as
// ParseRTPHeader does. PayloadEnd is len(b) and PaddingSize 0: neither can be
// known before decryption.
func ParseSRTPHeader(b []byte, h *RTPHeader) error {
	return parseHeader(b, h)
}

// IsRTP reports whether datagram b, on a port that also carries RTCP, STUN and
// DTLS, is an RTP packet: version 2 and a payload type outside RTCP's 64–95
// (RFC 5761).
func IsRTP(b []byte) bool {
	if len(b) < rtpFixedLen || b[0]>>6 != 2 {
		return false
	}
	pt := b[1] & 0x7f
	return pt < 64 || pt > 95
}

// parseHeader is ParseRTPHeader without the padding.
func parseHeader(b []byte, h *RTPHeader) error {
	if len(b) < rtpFixedLen {
		return ErrShortPacket
	}
	if b[0]>>6 != 2 {
		return ErrBadVersion
	}
	*h = RTPHeader{
		Extension:      b[0]&0x10 != 0,
		CSRCCount:      b[0] & 0x0f,
		Marker:         b[1]&0x80 != 0,
		PayloadType:    b[1] & 0x7f,
		SequenceNumber: binary.BigEndian.Uint16(b[2:]),
		Timestamp:      binary.BigEndian.Uint32(b[4:]),
		SSRC:           binary.BigEndian.Uint32(b[8:]),
	}
	n := rtpFixedLen + 4*int(h.CSRCCount)
	if h.Extension {
		if len(b) < n+4 {
			return ErrShortPacket
		}
		h.ExtensionProfile = binary.BigEndian.Uint16(b[n:])
		h.ExtensionLen = 4 * int(binary.BigEndian.Uint16(b[n+2:]))
		h.ExtensionOffset = n + 4
		n = h.ExtensionOffset + h.ExtensionLen
		if len(b) < n {
			return ErrShortPacket
		}
		if _, _, err := walkExtensions(b[h.ExtensionOffset:n], h.ExtensionProfile, 0); err != nil {
			return err
		}
	} else if len(b) < n {
		return ErrShortPacket
	}
	h.PayloadOffset = n
	h.PayloadEnd = len(b)
	return nil
}

// Payload returns the payload of b, the packet h was parsed from, without
// padding.
func (h *RTPHeader) Payload(b []byte) []byte {
	return b[h.PayloadOffset:h.PayloadEnd]
}

// CSRC returns the i-th contributing source of b, the packet h was parsed
// from; i must be below h.CSRCCount.
func (h *RTPHeader) CSRC(b []byte, i int) uint32 {
	return binary.BigEndian.Uint32(b[rtpFixedLen+4*i:])
}
