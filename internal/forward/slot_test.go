package forward

import (
	"testing"
	"time"

	"github.com/pion/webrtc/v4"
)

func newAudioUpFrom(source string, ssrc uint32) *UpTrack {
	return NewUpTrack(UpTrackParams{Source: source, Kind: webrtc.RTPCodecTypeAudio, SSRC: ssrc, Codec: opusCodec})
}

// A slot carries a, then b, then a again: one SSRC, sequence numbers without a
// gap or a step back, timestamps that follow wall time, and only the current
// source's packets.
func TestAudioSlotSwitchesSources(t *testing.T) {
	a, b := newAudioUpFrom("a", 0xa), newAudioUpFrom("b", 0xb)
	rec := &recorder{}
	d := NewAudioSlot("r", "audio-slot-0", opusCodec)
	if _, err := d.Bind(audioContext(5000).withWriter(rec)); err != nil {
		t.Fatal(err)
	}
	if d.Kind() != webrtc.RTPCodecTypeAudio || d.StreamID() != "audio-slot-0" || d.ID() != "audio-slot-0" {
		t.Fatalf("slot: kind %v stream %q id %q", d.Kind(), d.StreamID(), d.ID())
	}
	at := t0
	seqA, seqB := uint16(100), uint16(40000)
	tsA, tsB := uint32(1000), uint32(900000)
	sendBoth := func(n int) {
		for range n {
			feed(t, a, rtpPacket(t, 0xa, srcAudioPT, seqA, tsA, false, []byte{0xa}), at)
			feed(t, b, rtpPacket(t, 0xb, srcAudioPT, seqB, tsB, false, []byte{0xb}), at)
			seqA, seqB, tsA, tsB = seqA+1, seqB+1, tsA+960, tsB+960
			at = at.Add(20 * time.Millisecond)
		}
	}
	sendBoth(5) // no source yet: nothing
	d.SetSource(a)
	sendBoth(10)
	d.SetSource(b)
	// A fan-out of a that took its destinations before the switch still
	// offers the slot a packet: dropped.
	a.AddDown(d)
	feed(t, a, rtpPacket(t, 0xa, srcAudioPT, seqA-1, tsA-960, false, []byte{0xa}), at)
	a.RemoveDown(d)
	if c := d.Counters(); c.DroppedSwitched != 1 {
		t.Fatalf("a former source's packet after the switch: counters %+v, want it dropped", c)
	}
	sendBoth(10)
	d.SetSource(a)
	sendBoth(10)
	d.SetSource(nil)
	sendBoth(5)

	pkts := rec.packets()
	if len(pkts) != 30 {
		t.Fatalf("%d packets sent, want 30", len(pkts))
	}
	want := []byte{0xa, 0xb, 0xa}
	for i, p := range pkts {
		if p.hdr.SSRC != 5000 || p.hdr.PayloadType != 111 {
			t.Fatalf("packet %d: SSRC %d PT %d, want the slot's 5000 and 111", i, p.hdr.SSRC, p.hdr.PayloadType)
		}
		if p.payload[0] != want[i/10] {
			t.Fatalf("packet %d carries source %x, want %x", i, p.payload[0], want[i/10])
		}
		if p.hdr.Marker != (i%10 == 0) {
			t.Fatalf("packet %d: marker %v; a source's first packet (only) is marked", i, p.hdr.Marker)
		}
		if i == 0 {
			continue
		}
		prev := pkts[i-1].hdr
		if p.hdr.SequenceNumber != prev.SequenceNumber+1 {
			t.Fatalf("packet %d: seq %d after %d", i, p.hdr.SequenceNumber, prev.SequenceNumber)
		}
		if dt := p.hdr.Timestamp - prev.Timestamp; dt != 960 {
			t.Fatalf("packet %d: timestamp step %d, want 960 (20 ms at 48 kHz)", i, dt)
		}
	}
	if c := d.Counters(); c.Packets != 30 {
		t.Fatalf("counters %+v", c)
	}
}

// The slot's forward, as for any destination, allocates nothing per packet.
func TestAudioSlotForwardDoesNotAllocate(t *testing.T) {
	up := newAudioUpFrom("a", 0xa)
	w := &counter{}
	d := NewAudioSlot("r", "audio-slot-0", opusCodec)
	if _, err := d.Bind(audioContext(5000).withWriter(w)); err != nil {
		t.Fatal(err)
	}
	d.SetSource(up)
	raw := rtpPacket(t, 0xa, srcAudioPT, 0, 0, false, opusFrame)
	var pkt Packet
	seq := uint16(0)
	step := func() {
		seq++
		raw[2], raw[3] = byte(seq>>8), byte(seq)
		if up.parse(time.Now(), raw, &pkt, false) {
			up.forward(&pkt, up.testOut())
		}
	}
	if allocs := testing.AllocsPerRun(1000, step); allocs != 0 {
		t.Errorf("%v allocations per packet forwarded to an audio slot, want 0", allocs)
	}
	if w.n < 1000 {
		t.Errorf("the slot got %d packets: the measurement forwarded nothing", w.n)
	}
}
