package clip

import "fmt"

// Audio is an Opus clip: one packet per 20 ms frame, and the RFC 6464 level
// (−dBov, 0 loudest, 127 silence) of each frame.
type Audio struct {
	Packets [][]byte
	Levels  []uint8
}

// ParseOggOpus returns the Opus packets of an Ogg Opus file (RFC 7845) in order,
// without the two header packets (OpusHead, OpusTags). Packets keep pointing into
// b unless they span pages.
func ParseOggOpus(b []byte) ([][]byte, error) {
	var packets [][]byte
	var partial []byte // a packet continuing on the next page
	for off := 0; off < len(b); {
		if len(b)-off < 27 || string(b[off:off+4]) != "OggS" {
			return nil, fmt.Errorf("%w: no Ogg page at %d", ErrFormat, off)
		}
		nseg := int(b[off+26])
		segs := off + 27
		body := segs + nseg
		if body > len(b) {
			return nil, fmt.Errorf("%w: truncated segment table at %d", ErrFormat, off)
		}
		size := 0
		for _, s := range b[segs:body] {
			size += int(s)
		}
		if body+size > len(b) {
			return nil, fmt.Errorf("%w: truncated page at %d", ErrFormat, off)
		}
		if b[off+5]&0x01 == 0 && partial != nil { // not a continuation: drop the fragment
			partial = nil
		}
		p := body
		start := p
		for _, s := range b[segs:body] {
			p += int(s)
			if s < 255 { // a packet ends here
				pkt := b[start:p]
				if partial != nil {
					pkt = append(partial, pkt...)
					partial = nil
				}
				packets = append(packets, pkt)
				start = p
			}
		}
		if start < p {
			partial = append(partial, b[start:p]...)
		}
		off = body + size
	}
	if len(packets) < 2 || len(packets[0]) < 8 || string(packets[0][:8]) != "OpusHead" {
		return nil, fmt.Errorf("%w: no OpusHead", ErrFormat)
	}
	return packets[2:], nil
}
