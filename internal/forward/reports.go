package forward

import (
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
	report := &rtcp.SenderReport{
		SSRC: d.ssrc, NTPTime: sr.NTPTime, RTPTime: sr.RTPTime + offset,
		PacketCount: d.sentPackets, OctetCount: d.sentOctets,
	}
	d.mu.Unlock()
	_ = write([]rtcp.Packet{report})
}
