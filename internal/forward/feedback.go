package forward

import (
	"encoding/binary"
	"time"

	"github.com/pion/rtcp"

	"github.com/podium-sfu/podium/internal/media"
	"github.com/podium-sfu/podium/internal/rewrite"
	"github.com/podium-sfu/podium/internal/wire"
)

// ReadFeedback drains the receiver's RTCP for this track until read fails (the
// sender was removed or the connection closed). Pion's RTPSender.Read fits read.
func (d *DownTrack) ReadFeedback(read func([]byte) (int, error)) {
	buf := make([]byte, 1500)
	for {
		n, err := read(buf)
		if err != nil {
			return
		}
		d.handleCompound(time.Now(), buf[:n])
	}
}

// handleCompound splits a compound RTCP packet: transport-wide feedback goes
// to the Link decoded in place (parseTransportCC, no allocation), the rest
// through pion's decoder to HandleRTCP. Packets that do not parse are skipped
// (they come from the network).
func (d *DownTrack) handleCompound(now time.Time, b []byte) {
	for len(b) >= 4 {
		size := 4 * (int(binary.BigEndian.Uint16(b[2:])) + 1)
		if size > len(b) {
			return
		}
		p := b[:size]
		b = b[size:]
		if isTransportCC(p) {
			if l := d.link.Load(); l != nil {
				l.handleTransportCC(now, p)
			}
			continue
		}
		if pkts, err := rtcp.Unmarshal(p); err == nil {
			d.HandleRTCP(now, pkts)
		}
	}
}

// HandleRTCP terminates the receiver's feedback: keyframe requests go to the
// sender (aggregated by UpTrack.RequestKeyframe), NACKs are answered here.
//
// One goroutine at a time calls it (the track's feedback reader): NACK
// answers go out in its batch, flushed before it returns.
func (d *DownTrack) HandleRTCP(now time.Time, pkts []rtcp.Packet) {
	if d.fb == nil && d.proj != nil {
		d.fb = wire.NewBatch(feedbackBatch)
	}
	d.handleRTCP(now, pkts, d.fb)
	d.flushFeedback()
}

// handleRTCP is HandleRTCP with the caller's batch (nil: audio, nothing to
// resend), which it flushes when full, with no lock held.
func (d *DownTrack) handleRTCP(now time.Time, pkts []rtcp.Packet, out *wire.Batch) {
	for _, p := range pkts {
		switch p := p.(type) {
		case *rtcp.PictureLossIndication, *rtcp.FullIntraRequest:
			if d.up == nil {
				continue // an audio slot
			}
			d.up.stats.ReceiverKeyframes.Add(1)
			d.breaks.Add(1)
			d.up.RequestKeyframe(now)
		case *rtcp.TransportLayerCC, *rtcp.ReceiverEstimatedMaximumBitrate:
			// Transport-wide: whichever of the connection's senders it reaches.
			if l := d.link.Load(); l != nil {
				l.handleRTCP(now, p)
			}
		case *rtcp.TransportLayerNack:
			if d.up == nil {
				continue // an audio slot: audio is not resent
			}
			for _, pair := range p.Nacks {
				pair.Range(func(seq uint16) bool {
					d.up.stats.NACKs.Add(1)
					if out != nil && out.Free() == 0 {
						out.Flush()
					}
					if d.resend(seq, now, out) {
						d.up.stats.Retransmissions.Add(1)
					}
					return true
				})
			}
		}
	}
}

// feedbackBatch is the NACK answers sent in one system call.
const feedbackBatch = 16

func (d *DownTrack) flushFeedback() {
	if d.fb != nil && d.fb.Len() > 0 {
		d.fb.Flush()
	}
}

// resend answers one NACKed sequence number from the cache, as RTX when the
// receiver negotiated it (so its loss statistics stay honest), else as the original.
//
// A packet the receiver needs to decode on (sentLog.needed: the base layer
// of the segment it plays) goes first on the retransmission budget. If it
// cannot be repaired — gone from the source's store, older than the window,
// or still missing though resent and repairAge old — the receiver would stay
// frozen until its own keyframe request (Chromium's after 3 s without a
// decodable frame); the segment is given up at once instead (resyncLocked).
// A refusal by the budget is no such reason: the next NACK may be answered.
func (d *DownTrack) resend(seq uint16, now time.Time, out *wire.Batch) bool {
	if d.sent == nil {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.bound {
		return false
	}
	l := d.link.Load()
	var rtt, maxAge time.Duration
	if l != nil {
		rtt, maxAge = l.retransmitWindow()
	}
	e, check := d.sent.lookup(seq, now, rtt, maxAge)
	needed := e != nil && d.sent.needed(e)
	if needed && l != nil && e.resent() && now.UnixNano()-e.storedAt >= int64(repairAge(rtt)) {
		check = resendTooOld // its resends are lost too: a keyframe is nearer
	}
	var up *UpTrack
	if check == resendOK && int(e.encoding) < len(d.ups) {
		up = d.ups[e.encoding]
	}
	n, ok := 0, false
	if up != nil {
		n, ok = up.stored(e.srcSeq, d.rtxBuf[:cap(d.rtxBuf)])
	}
	if !ok {
		if l != nil {
			l.stats.skipped.Add(1)
		}
		if needed && check != resendInFlight {
			d.resyncLocked(l, now, rtt)
		}
		return false
	}
	orig := d.rtxBuf[:n]
	var h media.RTPHeader
	if media.ParseRTPHeader(orig, &h) != nil || h.Timestamp != e.srcTS {
		return false // the source restarted its sequence numbers since
	}
	rw := e.out()
	if rewrite.Apply(orig, &h, rw) != nil {
		return false
	}
	h.SequenceNumber, h.Timestamp, h.Marker = rw.SequenceNumber, rw.Timestamp, rw.Marker
	payload := orig[h.PayloadOffset:h.PayloadEnd]
	if l != nil {
		l.mu.Lock()
		allowed := l.allowRetransmitLocked(now, n, needed)
		l.mu.Unlock()
		if !allowed {
			return false
		}
		l.stats.retransmits.Add(1)
	}
	d.sent.markResent(e, now)
	pkt := Packet{Header: h, Payload: payload}
	d.fillHeader(&pkt)
	if d.rtxSSRC == 0 {
		return d.sendLocked(payload, false, out) == nil
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
	// No transport-wide number on the RTX stream: receivers address their
	// feedback to the SSRC of the newest packet, and pion delivers RTCP for an
	// RTX SSRC to nobody, so feedback would be lost.
	return d.sendUnstampedLocked(rtxPayload, out) == nil
}

// repairAge is how long after its first send a needed packet, resent at
// least once, may still be NACKed before it is given up: one resend had a
// round trip to arrive and more; never before the shortest window.
func repairAge(rtt time.Duration) time.Duration {
	return max(retransmitMinAge, 2*rtt)
}

// resyncHold is the longest a segment is not given up after its keyframe
// was sent (rtt: at least a quarter of it): its keyframe, tens of packets at
// the lowest layer, takes most of a second through a 128 kb/s cap and its
// losses a round trip or two to repair. Without it, each loss in a keyframe
// asked for the next: 43 keyframes in 20 s and no frame decoded.
const resyncHold = 2 * time.Second

// resyncHoldFor is how long a segment whose keyframe took keyBytes is not
// given up at estimate (bits/s) and rtt behind a cap: the keyframe's time on
// the link and three round trips to repair it, within resyncHold, never under
// four round trips. A fixed 2 s fits the 128 kb/s cap it was measured on; a
// middle layer's 5-9 KB keyframe at 450-650 kb/s needs a fraction of that,
// and a loss in it froze the picture for the whole 2 s (docs/adaptation.md).
func resyncHoldFor(keyBytes, estimate int, rtt time.Duration) time.Duration {
	hold := resyncHold
	if estimate > 0 {
		air := time.Duration(float64(keyBytes) * 8 / float64(estimate) * float64(time.Second))
		hold = min(hold, air+3*rtt)
	}
	return max(hold, 4*rtt)
}

// resyncLocked gives up the segment being forwarded: nothing more of it goes
// out (the receiver could not decode it, and it would queue before the
// keyframe), and the next packet of the wanted encoding asks for a keyframe
// (UpTrack.RequestKeyframe). A segment younger than its hold is not given up.
//   - Behind a cap the hold is resyncHoldFor, and within it the loss is left
//     to later NACKs: the repair is only late, in our own queue (giving the
//     segment up there froze a 128 kb/s receiver for 1.4-1.6 s, 0.2-0.8 s
//     before).
//   - While the link competes with flows that do not back off
//     (Link.Competing) the hold is resyncHold, as measured there, and the
//     segment is given up when it reaches that age, at the next packet
//     forwarded (heldResyncLocked), unless a keyframe came: Chromium stops
//     NACKing a packet the others' drops keep taking after about ten tries,
//     so a resync that waited for the next NACK never came, and the receiver
//     stayed frozen until its own request after 3 s (ten CUBIC flows: stalls
//     of 3.2 s at the lowest layer). One TCP-share run with resyncHoldFor
//     there too missed the return to the previous layers after both cycles of
//     pattern (iii); the test's spread is wide, so that is not proof either
//     way, and the measured hold stays.
func (d *DownTrack) resyncLocked(l *Link, now time.Time, rtt time.Duration) {
	if d.proj.Current() < 0 {
		return
	}
	competing := l != nil && l.Competing()
	hold := max(resyncHold, 4*rtt)
	if l != nil && !competing {
		hold = resyncHoldFor(d.sent.keyBytes, l.Estimate(), rtt)
	}
	if due := d.sent.segmentAt + int64(hold); now.UnixNano() < due {
		if !competing {
			if l != nil {
				l.stats.resyncsHeld.Add(1)
			}
			return
		}
		if d.resyncDue == 0 || d.resyncSegment != d.sent.segment {
			d.resyncDue, d.resyncSegment = due, d.sent.segment
		}
		return
	}
	d.resyncDue = 0
	d.stopSegmentLocked(l)
}

// heldResyncLocked applies a resync held back by resyncHold, if its segment
// is still the one being forwarded.
func (d *DownTrack) heldResyncLocked() {
	d.resyncDue = 0
	if d.resyncSegment != d.sent.segment || d.proj.Current() < 0 {
		return
	}
	d.stopSegmentLocked(d.link.Load())
}

func (d *DownTrack) stopSegmentLocked(l *Link) {
	d.proj.EncodingStopped(d.proj.Current())
	d.updateAcceptsLocked()
	d.breaks.Add(1)
	if l != nil {
		l.stats.resyncs.Add(1)
	}
}

// sendUnstampedLocked writes d.hdr and payload with no transport-wide number.
func (d *DownTrack) sendUnstampedLocked(payload []byte, out *wire.Batch) error {
	switch mode, dest := d.pathLocked(); {
	case mode == wire.Pending:
		return errNotConnected
	case mode == wire.Own && dest == nil:
		return errNoPath
	case mode == wire.Own && (out == nil || out.Free() == 0):
		return errBatchFull
	case mode == wire.Own:
		return d.protectLocked(payload, dest, out)
	}
	_, err := d.writer.WriteRTP(&d.hdr, payload)
	return err
}

// probePadding is the padding per probe packet: RTP padding is at most 255 bytes.
const probePadding = 255

// pad sends up to budget bytes of padding-only packets between two frames of
// the forwarded video, as bandwidth probes, and returns the bytes sent. They
// go on the media SSRC (see resend for why not RTX); receivers skip them.
func (d *DownTrack) pad(now time.Time, budget int, out *wire.Batch) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	l := d.link.Load()
	if !d.bound || d.proj == nil || l == nil || !d.selected.Load() || d.bypassed.Load() {
		return 0
	}
	sent := 0
	for sent < budget && (out == nil || out.Free() > 0) {
		seq, ts, ok := d.proj.Padding()
		if !ok {
			break
		}
		h := &d.hdr
		h.Version, h.Padding, h.PaddingSize, h.Marker = 2, true, probePadding, false
		h.Extension, h.Extensions, h.CSRC = false, h.Extensions[:0], h.CSRC[:0]
		h.PayloadType, h.SequenceNumber, h.Timestamp, h.SSRC = d.pt, seq, ts, d.ssrc
		err := d.sendLocked(nil, true, out)
		size := h.MarshalSize() + probePadding
		d.sentPackets++ // sender reports count padding packets, with no payload octets
		if err != nil {
			break
		}
		l.stats.probePackets.Add(1)
		l.stats.probeBytes.Add(uint64(size))
		sent += size
	}
	return sent
}
