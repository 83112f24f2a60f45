package forward

import (
	"sync/atomic"

	"github.com/pion/rtcp"
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
// the one being forwarded (the offset is known only for it).
func (d *DownTrack) relaySenderReport(sr SenderReport, encoding int) {
	if d.slot != nil {
		return // its sources' clocks are unrelated, and no video shares its stream: no lip sync to keep
	}
	d.mu.Lock()
	write := d.writeRTCP
	if !d.bound || write == nil {
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
	d.mu.Unlock()
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

// srScratch is the sender report relaySenderReport hands the writer, reused
// while no other relay to the DownTrack is under way: the writers (pion's
// WriteRTCP, the cascade's) marshal it before they return, so a relay
// allocates nothing of ours (it allocated the report and its slice, the top
// of meeting-8's heap profile).
type srScratch struct {
	busy atomic.Bool
	pkt  rtcp.SenderReport
	pkts [1]rtcp.Packet
}
