package session

import (
	"encoding/binary"
	"math/rand/v2"
	"time"

	"github.com/podium-sfu/podium/internal/forward"
	"github.com/podium-sfu/podium/internal/wire"
)

// ownRTCP is received's way out on the publish connection's own data plane
// (its route has keys and a UDP pair of ours): the NACKs and receiver
// reports written in place, sealed by a sealer of ours and sent on the
// socket, where pion's WriteRTCP built packets, marshalled them and sealed
// them in its SRTCP session (a tenth of meeting-8's allocations). Under its
// own SSRC, never pion's path's: each SSRC's SRTCP index is followed by one
// sealer. Only run's goroutine uses it.
type ownRTCP struct {
	route *wire.Route
	ssrc  uint32
	keys  *wire.Keys // seal's
	seal  *wire.RTCPSealer
	out   *wire.Batch
	buf   []byte // the compound packet being built
}

// ownRTCPMax: a compound is cut, between packets, into datagrams of at most
// this many bytes before sealing (a NACK is small; a report of 31 blocks, 760).
const ownRTCPMax = 1200

func newOwnRTCP(r *wire.Route, pionSSRC uint32) *ownRTCP {
	return &ownRTCP{route: r, ssrc: pionSSRC ^ (1 + rand.Uint32N(1<<32-1))} // never pionSSRC
}

// dest is where the own path sends now, its sealer made for the route's
// keys (nil: pion's path).
func (o *ownRTCP) dest() *wire.Dest {
	if o == nil {
		return nil
	}
	mode, keys := o.route.Decide()
	d := o.route.Dest()
	if mode != wire.Own || d == nil {
		return nil
	}
	if keys != o.keys {
		seal, err := keys.RTCPSealer()
		if err != nil {
			return nil
		}
		o.keys, o.seal = keys, seal
		if o.out == nil {
			o.out = wire.NewBatch(2)
		}
	}
	return d
}

// send seals o.buf and sends it to d.
func (o *ownRTCP) send(d *wire.Dest) {
	for b := o.buf; len(b) > 0; {
		n := 0
		for n < len(b) {
			size := 4 * (int(binary.BigEndian.Uint16(b[n+2:])) + 1)
			if n > 0 && n+size > ownRTCPMax {
				break
			}
			n += size
		}
		if o.out.Free() == 0 {
			o.out.Flush()
		}
		if sealed, err := o.seal.Seal(o.out.Slot(), b[:n]); err == nil {
			o.out.Commit(len(sealed), d)
		}
		b = b[n:]
	}
	o.out.Flush()
}

// appendNACK appends a generic NACK (RFC 4585 6.2.1) from sender for seqs
// of media, in pairs as rtcp.NackPairsFromSequenceNumbers makes them.
func appendNACK(b []byte, sender, media uint32, seqs []uint16) []byte {
	start := len(b)
	b = append(b, 0x80|1, 205, 0, 0)
	b = binary.BigEndian.AppendUint32(b, sender)
	b = binary.BigEndian.AppendUint32(b, media)
	pid, lost := seqs[0], uint16(0)
	for _, m := range seqs[1:] {
		if m-pid > 16 {
			b = binary.BigEndian.AppendUint16(binary.BigEndian.AppendUint16(b, pid), lost)
			pid, lost = m, 0
			continue
		}
		lost |= 1 << (m - pid - 1)
	}
	b = binary.BigEndian.AppendUint16(binary.BigEndian.AppendUint16(b, pid), lost)
	binary.BigEndian.PutUint16(b[start+2:], uint16((len(b)-start)/4-1))
	return b
}

// appendReports appends from ssrc receiver reports (RFC 3550 6.4.2) on
// every stream of ups that has one, 31 blocks at most per report.
func appendReports(b []byte, ssrc uint32, now time.Time, ups []*forward.UpTrack) []byte {
	start, blocks := -1, 0
	for _, up := range ups {
		rr, ok := up.ReceptionReport(now)
		if !ok {
			continue
		}
		if start < 0 || blocks == 31 {
			start, blocks = len(b), 0
			b = append(b, 0x80, 201, 0, 1)
			b = binary.BigEndian.AppendUint32(b, ssrc)
		}
		blocks++
		b[start] = 0x80 | byte(blocks)
		binary.BigEndian.PutUint16(b[start+2:], uint16(1+6*blocks))
		b = binary.BigEndian.AppendUint32(b, rr.SSRC)
		b = append(b, rr.FractionLost, byte(rr.TotalLost>>16), byte(rr.TotalLost>>8), byte(rr.TotalLost))
		b = binary.BigEndian.AppendUint32(b, rr.LastSequenceNumber)
		b = binary.BigEndian.AppendUint32(b, rr.Jitter)
		b = binary.BigEndian.AppendUint32(b, rr.LastSenderReport)
		b = binary.BigEndian.AppendUint32(b, rr.Delay)
	}
	return b
}
