package bwe

import (
	"errors"
	"fmt"
	"time"

	"github.com/pion/rtcp"
)

// ErrMalformed is returned for a transport-wide feedback packet whose chunks
// and deltas do not agree.
var ErrMalformed = errors.New("bwe: malformed transport-wide feedback")

// TWCC units: the reference time counts 64 ms, pion gives deltas in µs.
const referenceUnit = 64 * time.Millisecond

// FromTransportCC decodes pion's TransportLayerCC into dst, reusing
// dst.Packets' storage. It rejects a packet whose status chunks cover fewer
// packets than PacketStatusCount, whose received packets and receive deltas
// do not pair up, or that uses the reserved status symbol (as libwebrtc does).
// Arrival times are reference time × 64 ms plus the running sum of the
// deltas.
func FromTransportCC(dst *Feedback, p *rtcp.TransportLayerCC) error {
	dst.BaseSeq = p.BaseSequenceNumber
	dst.Packets = dst.Packets[:0]
	count := int(p.PacketStatusCount)
	at := time.Duration(p.ReferenceTime) * referenceUnit
	deltas := 0
	status := func(sym uint16) error {
		switch sym {
		case rtcp.TypeTCCPacketNotReceived:
			dst.Packets = append(dst.Packets, Packet{})
		case rtcp.TypeTCCPacketReceivedSmallDelta, rtcp.TypeTCCPacketReceivedLargeDelta:
			if deltas >= len(p.RecvDeltas) || p.RecvDeltas[deltas] == nil {
				return fmt.Errorf("%w: fewer receive deltas than received packets", ErrMalformed)
			}
			at += time.Duration(p.RecvDeltas[deltas].Delta) * time.Microsecond
			deltas++
			dst.Packets = append(dst.Packets, Packet{Arrival: at, Received: true})
		default:
			return fmt.Errorf("%w: reserved status symbol", ErrMalformed)
		}
		return nil
	}
	for _, c := range p.PacketChunks {
		if len(dst.Packets) >= count {
			break
		}
		var run *rtcp.RunLengthChunk
		var vec *rtcp.StatusVectorChunk
		switch c := c.(type) {
		case *rtcp.RunLengthChunk:
			run = c
		case *rtcp.StatusVectorChunk:
			vec = c
		default:
			return fmt.Errorf("%w: unknown chunk %T", ErrMalformed, c)
		}
		if run != nil {
			n := min(int(run.RunLength), count-len(dst.Packets))
			for range n {
				if err := status(run.PacketStatusSymbol); err != nil {
					return err
				}
			}
			continue
		}
		for _, sym := range vec.SymbolList {
			if len(dst.Packets) >= count {
				break
			}
			if vec.SymbolSize == rtcp.TypeTCCSymbolSizeOneBit && sym > 1 {
				return fmt.Errorf("%w: one-bit symbol %d", ErrMalformed, sym)
			}
			if err := status(sym); err != nil {
				return err
			}
		}
	}
	if len(dst.Packets) < count {
		return fmt.Errorf("%w: chunks cover %d of %d packets", ErrMalformed, len(dst.Packets), count)
	}
	if deltas != len(p.RecvDeltas) {
		return fmt.Errorf("%w: %d receive deltas for %d received packets", ErrMalformed, len(p.RecvDeltas), deltas)
	}
	return nil
}
