package forward

import (
	"encoding/binary"
	"time"

	"github.com/pion/rtcp"

	"github.com/podium-sfu/podium/internal/media"
)

// ReadFeedback drains the receiver's RTCP for this track until read fails (the
// sender was removed or the connection closed). Pion's RTPSender.Read fits read.
func (d *DownTrack) ReadFeedback(read func([]byte) (int, error)) {
	readRTCP(read, func(pkts []rtcp.Packet) { d.HandleRTCP(time.Now(), pkts) })
}

// readRTCP hands each compound RTCP packet read to handle until read fails;
// packets that do not parse are skipped (they come from the network).
func readRTCP(read func([]byte) (int, error), handle func([]rtcp.Packet)) {
	buf := make([]byte, 1500)
	for {
		n, err := read(buf)
		if err != nil {
			return
		}
		if pkts, err := rtcp.Unmarshal(buf[:n]); err == nil {
			handle(pkts)
		}
	}
}

// HandleRTCP terminates the receiver's feedback: keyframe requests go to the
// sender (aggregated by UpTrack.RequestKeyframe), NACKs are answered here.
func (d *DownTrack) HandleRTCP(now time.Time, pkts []rtcp.Packet) {
	for _, p := range pkts {
		switch p := p.(type) {
		case *rtcp.PictureLossIndication, *rtcp.FullIntraRequest:
			d.up.stats.ReceiverKeyframes.Add(1)
			d.up.RequestKeyframe(now)
		case *rtcp.TransportLayerNack:
			for _, pair := range p.Nacks {
				pair.Range(func(seq uint16) bool {
					d.up.stats.NACKs.Add(1)
					if d.resend(seq, now) {
						d.up.stats.Retransmissions.Add(1)
					}
					return true
				})
			}
		}
	}
}

// resend answers one NACKed sequence number from the cache, as RTX when the
// receiver negotiated it (so its loss statistics stay honest), else as the original.
func (d *DownTrack) resend(seq uint16, now time.Time) bool {
	if d.cache == nil {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.bound {
		return false
	}
	n, ok := d.cache.Resend(seq, d.rtxBuf[:cap(d.rtxBuf)], now, 0)
	if !ok {
		return false
	}
	orig := d.rtxBuf[:n]
	var h media.RTPHeader
	if media.ParseRTPHeader(orig, &h) != nil {
		return false
	}
	payload := orig[h.PayloadOffset:h.PayloadEnd]
	pkt := Packet{Header: h, Payload: payload}
	d.fillHeader(&pkt)
	if d.rtxSSRC == 0 {
		_, err := d.writer.WriteRTP(&d.hdr, payload)
		return err == nil
	}
	// RFC 4588: the RTX payload is the original sequence number then the original payload.
	osn := h.SequenceNumber
	rtxPayload := d.rtxOut[:2+len(payload)]
	binary.BigEndian.PutUint16(rtxPayload, osn)
	copy(rtxPayload[2:], payload)
	d.hdr.SSRC = d.rtxSSRC
	d.hdr.PayloadType = d.rtxPT
	d.hdr.SequenceNumber = d.rtxSeq
	d.rtxSeq++
	_, err := d.writer.WriteRTP(&d.hdr, rtxPayload)
	return err == nil
}
