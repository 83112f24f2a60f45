package forward

import (
	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/rewrite"
	"github.com/podium-sfu/podium/internal/wire"
)

// slot is what a DownTrack that is an audio slot has: a receiver's fixed
// audio track whose source the room changes as speakers come and go, sent
// as one stream (one SSRC, continuous numbering: rewrite.AudioSlot).
type slot struct {
	codec webrtc.RTPCodecCapability
	src   *UpTrack // the source carried now (nil: none)
	sw    rewrite.AudioSlot
}

// NewAudioSlot returns one of receiver's audio slots for codec (Opus): a
// DownTrack, track and stream id as given, that carries nothing until
// SetSource. Add it to the receiver's subscribe connection once; it stays for
// the session.
func NewAudioSlot(receiver, id string, codec webrtc.RTPCodecCapability) *DownTrack {
	d := &DownTrack{receiver: receiver, id: id, streamID: id,
		slot: &slot{codec: codec, sw: rewrite.NewAudioSlot(int(codec.ClockRate))}}
	d.selected.Store(true)
	return d
}

// SetSource makes the slot carry up's audio from its next packet on (nil:
// nothing): the slot leaves its former source's destinations and joins up's.
// A packet of the former source still in flight is dropped (write). Only the
// room loop calls it.
func (d *DownTrack) SetSource(up *UpTrack) {
	d.mu.Lock()
	old := d.slot.src
	if old == up {
		d.mu.Unlock()
		return
	}
	d.slot.src = up
	d.slot.sw.Switch()
	d.mu.Unlock()
	if old != nil {
		old.RemoveDown(d)
	}
	if up != nil {
		up.AddDown(d)
	}
}

// IsSlot reports whether d is an audio slot rather than one source's track.
func (d *DownTrack) IsSlot() bool { return d.slot != nil }

// writeSlotLocked is write for an audio slot: the current source's packets,
// renumbered into the slot's stream (a switch's first packet marked).
func (d *DownTrack) writeSlotLocked(p *Packet, batch *wire.Batch) bool {
	if p.From != d.slot.src {
		d.counters.DroppedSwitched++
		return false
	}
	seq, ts, marker, ok := d.slot.sw.Next(p.Arrival, p.Header.SequenceNumber, p.Header.Timestamp)
	if !ok {
		d.counters.DroppedSwitched++
		return false
	}
	d.fillHeader(p)
	d.hdr.SequenceNumber, d.hdr.Timestamp, d.hdr.Marker = seq, ts, p.Header.Marker || marker
	// Redundancy only from this source's turn: earlier packets would land
	// among the former source's timestamps.
	payload, pt := d.audioPayloadLocked(p, d.slot.sw.Before(p.Header.SequenceNumber))
	d.hdr.PayloadType = pt
	err := d.sendLocked(payload, false, batch)
	d.countSentLocked(len(payload), err)
	return err == nil
}
