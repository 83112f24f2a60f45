package media

import "errors"

// RFC 2198 redundant audio (RED): a payload of blocks, each an earlier
// packet's payload sent again, oldest first, then the primary (this
// packet's own). A redundant block's 4-byte header is F=1, its payload type
// (7 bits), how far its timestamp lies before the packet's (14 bits) and its
// length (10 bits); the primary's 1-byte header is F=0 and its payload type.
// Its length is what remains.

const (
	// REDMaxOffset is the largest timestamp offset a redundant block can carry.
	REDMaxOffset = 1<<14 - 1
	// REDMaxBlock is the largest redundant block (the primary has no limit).
	REDMaxBlock = 1<<10 - 1
)

var (
	// ErrBadRED means a RED payload's headers do not fit its length or
	// describe no primary block.
	ErrBadRED = errors.New("media: malformed RED payload")
	// ErrREDBlock means a block cannot be put in a RED payload: its
	// payload type, timestamp offset or length is out of range.
	ErrREDBlock = errors.New("media: block does not fit RED")
)

// REDBlock is one block of a RED payload; Data aliases the payload parsed.
type REDBlock struct {
	PayloadType uint8
	TSOffset    uint16 // before the packet's timestamp (0 for the primary)
	Data        []byte
}

// ParseRED reads a RED payload: it returns the primary block, and stores
// the newest redundant blocks, oldest first, in red[:n] (those beyond
// len(red) skipped). It does not allocate.
func ParseRED(payload []byte, red []REDBlock) (primary REDBlock, n int, err error) {
	blocks, off, size := 0, 0, 0
	for {
		if off >= len(payload) {
			return REDBlock{}, 0, ErrBadRED
		}
		if payload[off]&0x80 == 0 {
			break
		}
		if off+4 > len(payload) {
			return REDBlock{}, 0, ErrBadRED
		}
		size += int(payload[off+2]&0x03)<<8 | int(payload[off+3])
		blocks++
		off += 4
	}
	data := off + 1 // after the primary's header
	if data+size > len(payload) {
		return REDBlock{}, 0, ErrBadRED
	}
	skip := max(0, blocks-len(red))
	for i := range blocks {
		h := payload[4*i:]
		l := int(h[2]&0x03)<<8 | int(h[3])
		if i >= skip {
			red[n] = REDBlock{PayloadType: h[0] & 0x7f, TSOffset: uint16(h[1])<<6 | uint16(h[2])>>2, Data: payload[data : data+l : data+l]}
			n++
		}
		data += l
	}
	return REDBlock{PayloadType: payload[off] & 0x7f, Data: payload[data:]}, n, nil
}

// AppendRED appends to dst the RED payload of the redundant blocks red
// (oldest first) and the primary block of payload type pt. It allocates only
// when dst lacks the room.
func AppendRED(dst []byte, red []REDBlock, pt uint8, primary []byte) ([]byte, error) {
	if pt > 0x7f {
		return dst, ErrREDBlock
	}
	for _, b := range red {
		if b.PayloadType > 0x7f || b.TSOffset > REDMaxOffset || len(b.Data) > REDMaxBlock {
			return dst, ErrREDBlock
		}
	}
	for _, b := range red {
		l := len(b.Data)
		dst = append(dst, 0x80|b.PayloadType, byte(b.TSOffset>>6), byte(b.TSOffset<<2)|byte(l>>8), byte(l))
	}
	dst = append(dst, pt)
	for _, b := range red {
		dst = append(dst, b.Data...)
	}
	return append(dst, primary...), nil
}
