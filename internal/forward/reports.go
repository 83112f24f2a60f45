package forward

import (
	"encoding/binary"
	"sync/atomic"

	"github.com/pion/rtcp"

	"github.com/podium-sfu/podium/internal/wire"
)

// SetRTCPWriter gives the DownTrack the receiver connection's RTCP writer, for the
// sender reports it translates.
func (d *DownTrack) SetRTCPWriter(write func([]rtcp.Packet) error) {
	d.mu.Lock()
	d.writeRTCP = write
	d.mu.Unlock()
}

// relaySenderReport translates a sender report of encoding into this receiver's
// stream: same NTP time, RTP time moved by the projection's offset, our SSRC and
// counts. Receivers use it for lip sync, so it is only sent while that encoding is
// the one being forwarded (the offset is known only for it). It follows the
// track's RTP: on the own data plane sealed into out (the caller flushes it,
// with no lock held), else through the connection's RTCP writer.
func (d *DownTrack) relaySenderReport(sr SenderReport, encoding int, out *wire.Batch) {
	if d.slot != nil {
		return // its sources' clocks are unrelated, and no video shares its stream: no lip sync to keep
	}
	d.mu.Lock()
	if !d.bound {
		d.mu.Unlock()
		return
	}
	var offset uint32
	if d.proj != nil {
		if d.proj.Current() != encoding {
			d.mu.Unlock()
			return
		}
		offset = d.proj.TimestampOffset()
	}
	report := rtcp.SenderReport{
		SSRC: d.ssrc, NTPTime: sr.NTPTime, RTPTime: sr.RTPTime + offset,
		PacketCount: d.sentPackets, OctetCount: d.sentOctets,
	}
	write := d.writeRTCP
	mode, dest := d.pathLocked()
	if mode != wire.Pion {
		// Pending or Own: our sealer alone protects the SSRC's SRTCP (a
		// report through pion's session now would reuse the indexes, and
		// with GCM the nonces, our sealer starts from).
		if mode == wire.Own && dest != nil && out != nil && out.Free() > 0 {
			d.sealReportLocked(&report, dest, out)
		}
		d.mu.Unlock()
		return
	}
	d.mu.Unlock()
	if write == nil {
		return
	}
	if !d.sr.busy.CompareAndSwap(false, true) {
		r := report // another encoding's relay has the scratch (a switch under way)
		_ = write([]rtcp.Packet{&r})
		return
	}
	d.sr.pkt = report
	d.sr.pkts[0] = &d.sr.pkt
	_ = write(d.sr.pkts[:])
	d.sr.busy.Store(false)
}

// sealReportLocked seals report with the track's sender-report sealer
// (made for the route's keys) and queues it in out for dest.
func (d *DownTrack) sealReportLocked(report *rtcp.SenderReport, dest *wire.Dest, out *wire.Batch) {
	if _, keys := d.route.Load().Decide(); keys != d.sr.keys {
		if keys == nil {
			return
		}
		seal, err := keys.RTCPSealer()
		if err != nil {
			return
		}
		d.sr.keys, d.sr.seal = keys, seal
	}
	// RFC 3550 6.4.1, no report blocks: what rtcp.SenderReport.Marshal writes.
	b := d.sr.plain[:]
	b[0], b[1] = 0x80, byte(rtcp.TypeSenderReport)
	binary.BigEndian.PutUint16(b[2:], uint16(len(b)/4-1))
	binary.BigEndian.PutUint32(b[4:], report.SSRC)
	binary.BigEndian.PutUint64(b[8:], report.NTPTime)
	binary.BigEndian.PutUint32(b[16:], report.RTPTime)
	binary.BigEndian.PutUint32(b[20:], report.PacketCount)
	binary.BigEndian.PutUint32(b[24:], report.OctetCount)
	if sealed, err := d.sr.seal.Seal(out.Slot(), b); err == nil {
		out.Commit(len(sealed), dest)
	}
}

// srScratch is the sender report relaySenderReport hands the writer, reused
// while no other relay to the DownTrack is under way: the writers (pion's
// WriteRTCP, the cascade's) marshal it before they return, so a relay
// allocates nothing of ours (it allocated the report and its slice, the top
// of meeting-8's heap profile). On the own data plane (guarded by the
// DownTrack's mu): the sealer of the track's sender reports and the report
// before sealing.
type srScratch struct {
	busy atomic.Bool
	pkt  rtcp.SenderReport
	pkts [1]rtcp.Packet

	keys  *wire.Keys // seal's
	seal  *wire.RTCPSealer
	plain [28]byte
}
