package forward

import (
	"encoding/binary"
	"errors"
	"time"

	"github.com/podium-sfu/podium/internal/algo/bwe"
)

// Transport-wide congestion control feedback (draft-holmer-rmcat-transport-
// wide-cc-extensions-01 section 3.1), read straight from the RTCP bytes into a
// reused bwe.Feedback. Receivers send one every 50–100 ms, and decoding it
// with pion's rtcp package allocated one object per status chunk and per
// received packet: 70 % of the whole server's allocations in meeting-8.
// parseTransportCC accepts and decodes exactly what rtcp.Unmarshal followed by
// bwe.FromTransportCC accept and decode (TestParseTransportCCMatchesPion,
// FuzzParseTransportCC).

const (
	rtcpTypeTransportFeedback = 205
	rtcpFormatTCC             = 15
	tccFixedLen               = 20 // header, sender and media SSRC, base, count, reference time, fb count
	tccDeltaUnit              = 250 * time.Microsecond
	tccReferenceUnit          = 64 * time.Millisecond
)

var (
	errTCCShort = errors.New("transport-wide feedback too short")
	errTCCType  = errors.New("not a transport-wide feedback packet")
)

// isTransportCC reports whether the RTCP packet starting at b is a
// transport-wide feedback (its header only; parseTransportCC checks the rest).
func isTransportCC(b []byte) bool {
	return len(b) >= 4 && b[0]>>6 == 2 && b[0]&0x1f == rtcpFormatTCC && b[1] == rtcpTypeTransportFeedback
}

// tccSymbols walks the status chunks of a feedback whose packet is b (length
// total), calling each with every status symbol pion's decoder lists, in order,
// with whether it is within the packet status count. It returns the offset of
// the receive deltas.
func tccSymbols(b []byte, total, count int, each func(sym uint8, within bool)) (int, error) {
	pos, done := tccFixedLen, 0
	for done < count {
		if pos+2 >= total {
			return 0, errTCCShort
		}
		c := binary.BigEndian.Uint16(b[pos:])
		switch {
		case c&0x8000 == 0: // run length: symbol, 13-bit length
			sym := uint8(c >> 13 & 3)
			n := min(int(c&0x1fff), count-done)
			for range n {
				each(sym, true)
			}
			done += n
		case c&0x4000 == 0: // status vector of 14 one-bit symbols
			for i := 13; i >= 0; i-- {
				each(uint8(c>>i&1), done < count)
				done++
			}
		default: // status vector of 7 two-bit symbols
			for i := 6; i >= 0; i-- {
				each(uint8(c>>(2*i)&3), done < count)
				done++
			}
		}
		pos += 2
	}
	return pos, nil
}

// parseTransportCC decodes the transport-wide feedback packet b (from its
// RTCP header on) into dst, reusing dst.Packets; it does not allocate once
// dst.Packets has grown to the largest feedback seen.
func parseTransportCC(b []byte, dst *bwe.Feedback) error {
	if len(b) < 8 || b[0]>>6 != 2 {
		return errTCCShort
	}
	total := 4 * (int(binary.BigEndian.Uint16(b[2:])) + 1)
	if total < tccFixedLen || len(b) < total {
		return errTCCShort
	}
	if !isTransportCC(b) {
		return errTCCType
	}
	count := int(binary.BigEndian.Uint16(b[14:]))
	// First walk: where the deltas start, how many there are and their sizes'
	// sum, and whether a status is one the estimator refuses.
	var deltaBytes, received int
	bad := false
	start, err := tccSymbols(b, total, count, func(sym uint8, within bool) {
		switch sym {
		case 1:
			deltaBytes++
			received++
		case 2:
			deltaBytes += 2
			received++
		}
		if within && sym == 3 || !within && (sym == 1 || sym == 2) {
			bad = true // reserved symbol; or a delta for no counted packet
		}
	})
	if err != nil {
		return err
	}
	if start+deltaBytes > total {
		return errTCCShort
	}
	if bad {
		return bwe.ErrMalformed
	}
	// Second walk: statuses and arrival times.
	dst.BaseSeq = binary.BigEndian.Uint16(b[12:])
	dst.Packets = dst.Packets[:0]
	at := time.Duration(uint32(b[16])<<16|uint32(b[17])<<8|uint32(b[18])) * tccReferenceUnit
	pos := start
	_, _ = tccSymbols(b, total, count, func(sym uint8, within bool) {
		if !within {
			return
		}
		switch sym {
		case 1:
			at += time.Duration(b[pos]) * tccDeltaUnit
			pos++
		case 2:
			at += time.Duration(int16(binary.BigEndian.Uint16(b[pos:]))) * tccDeltaUnit
			pos += 2
		default:
			dst.Packets = append(dst.Packets, bwe.Packet{})
			return
		}
		dst.Packets = append(dst.Packets, bwe.Packet{Arrival: at, Received: true})
	})
	return nil
}
