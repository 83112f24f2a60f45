package forward

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/media"
)

const redPT = 63

var redCodec = webrtc.RTPCodecCapability{MimeType: MimeTypeRED, ClockRate: 48000, Channels: 2, SDPFmtpLine: "111/111"}

// audioREDContext negotiates Opus as 111 and RED of it as 63, as Chromium answers our offer.
func audioREDContext(ssrc webrtc.SSRC) *fakeContext {
	c := audioContext(ssrc)
	c.codecs = append(c.codecs, webrtc.RTPCodecParameters{RTPCodecCapability: redCodec, PayloadType: redPT})
	return c
}

// opusN is packet n's Opus payload: distinct, so blocks can be told apart.
func opusN(n int) []byte { return []byte{0xfc, byte(n), byte(n >> 8), 0x01} }

// decoded is what a RED receiver gets back from one packet: its primary,
// and the redundant blocks' first payload bytes (packet numbers) with
// their offsets.
func decodeRED(t *testing.T, p written) (primary []byte, blocks []media.REDBlock) {
	t.Helper()
	if p.hdr.PayloadType != redPT {
		return p.payload, nil
	}
	red := make([]media.REDBlock, 4)
	prim, n, err := media.ParseRED(p.payload, red)
	if err != nil {
		t.Fatalf("RED payload % x: %v", p.payload, err)
	}
	if prim.PayloadType != 111 {
		t.Fatalf("primary's payload type %d, want 111", prim.PayloadType)
	}
	for _, b := range red[:n] {
		if b.PayloadType != 111 {
			t.Fatalf("redundant block's payload type %d, want 111", b.PayloadType)
		}
	}
	return prim.Data, red[:n]
}

func TestREDHistory(t *testing.T) {
	type pkt struct {
		seq  uint16
		ts   uint32
		size int // 0: opusN
	}
	for _, c := range []struct {
		name string
		pkts []pkt
		want []int // redundant blocks of the last packet's fullest payload
	}{
		{"first packet", []pkt{{10, 0, 0}}, nil},
		{"one before", []pkt{{10, 0, 0}, {11, 960, 0}}, []int{1}},
		{"two before", []pkt{{10, 0, 0}, {11, 960, 0}, {12, 1920, 0}}, []int{2, 1}},
		{"three before: two repeated", []pkt{{9, 0, 0}, {10, 960, 0}, {11, 1920, 0}, {12, 2880, 0}}, []int{2, 1}},
		{"across sequence wrap", []pkt{{65534, 0, 0}, {65535, 960, 0}, {0, 1920, 0}}, []int{2, 1}},
		{"the one before lost", []pkt{{10, 0, 0}, {12, 1920, 0}}, nil},
		{"the one before that lost", []pkt{{9, 0, 0}, {11, 1920, 0}, {12, 2880, 0}}, []int{1}},
		{"DTX: beyond the 14-bit offset", []pkt{{10, 0, 0}, {11, 400 * 48, 0}}, nil},
		{"largest offset", []pkt{{10, 0, 0}, {11, media.REDMaxOffset, 0}}, []int{1}},
		{"same timestamp", []pkt{{10, 960, 0}, {11, 960, 0}}, nil},
		{"timestamp backwards", []pkt{{10, 1920, 0}, {11, 960, 0}}, nil},
		{"a block too long to repeat", []pkt{{10, 0, media.REDMaxBlock + 1}, {11, 960, 0}}, nil},
		{"too long together", []pkt{{10, 0, 500}, {11, 960, 500}, {12, 1920, 500}}, []int{1}},
		{"late packet keeps the newer", []pkt{{10, 0, 0}, {11, 960, 0}, {7, 0, 0}, {12, 1920, 0}}, []int{2, 1}},
	} {
		h := newREDHistory()
		var last pkt
		var opus []byte
		for i, p := range c.pkts {
			opus = opusN(int(p.seq))
			if p.size > 0 {
				opus = bytes.Repeat([]byte{byte(i)}, p.size)
			}
			h.add(p.seq, p.ts, opus)
			last = p
		}
		payload, red := h.payload(opus, redDepth)
		if !red {
			if c.want != nil || !bytes.Equal(payload, opus) {
				t.Errorf("%s: plain Opus, want %d redundant blocks", c.name, len(c.want))
			}
			continue
		}
		blocks := make([]media.REDBlock, 4)
		prim, n, err := media.ParseRED(payload, blocks)
		if err != nil || !bytes.Equal(prim.Data, opus) {
			t.Errorf("%s: RED % x: %v", c.name, payload, err)
			continue
		}
		if n != len(c.want) {
			t.Errorf("%s: %d redundant blocks, want %d", c.name, n, len(c.want))
			continue
		}
		for i, back := range c.want {
			b := blocks[i]
			if c.pkts[0].size == 0 && !bytes.Equal(b.Data, opusN(int(last.seq)-back)) {
				t.Errorf("%s: block %d is % x, want packet %d's", c.name, i, b.Data, last.seq-uint16(back))
			}
		}
		if len(payload) > redMaxPayload {
			t.Errorf("%s: RED payload of %d bytes, over %d", c.name, len(payload), redMaxPayload)
		}
		// A receiver allowed fewer blocks gets the newest ones.
		if one, _ := h.payload(opus, 1); len(c.want) == 2 {
			if _, n, _ := media.ParseRED(one, blocks); n != 1 || !bytes.Equal(blocks[0].Data, opusN(int(last.seq)-1)) {
				t.Errorf("%s: one block allowed: % x", c.name, one)
			}
		}
	}
}

// One source, four receivers: one negotiated RED, one did not, one did
// but decrypts end to end, one did but the room holds RED back (SetRED).
// The first gets each packet with the two before it (what it lost, it
// finds in the next two); the others plain Opus.
func TestDownTrackRED(t *testing.T) {
	up := newAudioUpFrom("a", srcAudioSSRC)
	red, plain, e2ee, off := &recorder{}, &recorder{}, &recorder{}, &recorder{}
	dRED, dPlain, dE2EE, dOff := NewDownTrack(up, "r1"), NewDownTrack(up, "r2"), NewDownTrack(up, "r3"), NewDownTrack(up, "r4")
	dE2EE.SetPlainAudio()
	for _, b := range []struct {
		d   *DownTrack
		ctx *fakeContext
	}{{dRED, audioREDContext(1).withWriter(red)}, {dPlain, audioContext(2).withWriter(plain)}, {dE2EE, audioREDContext(3).withWriter(e2ee)},
		{dOff, audioREDContext(4).withWriter(off)}} {
		if _, err := b.d.Bind(b.ctx); err != nil {
			t.Fatal(err)
		}
		b.d.SetRED(true)
		up.AddDown(b.d)
	}
	dOff.SetRED(false)
	for n := range 5 {
		feed(t, up, rtpPacket(t, srcAudioSSRC, srcAudioPT, uint16(100+n), uint32(n*960), false, opusN(n)), t0.Add(time.Duration(n)*20*time.Millisecond))
	}
	for _, r := range []*recorder{plain, e2ee, off} {
		for n, p := range r.packets() {
			if p.hdr.PayloadType != 111 || !bytes.Equal(p.payload, opusN(n)) {
				t.Fatalf("plain receiver's packet %d: PT %d % x, want Opus", n, p.hdr.PayloadType, p.payload)
			}
		}
	}
	pkts := red.packets()
	if len(pkts) != 5 {
		t.Fatalf("%d packets to the RED receiver, want 5", len(pkts))
	}
	if pkts[0].hdr.PayloadType != 111 {
		t.Errorf("the first packet, with nothing to repeat: PT %d, want plain Opus", pkts[0].hdr.PayloadType)
	}
	for n, p := range pkts {
		primary, blocks := decodeRED(t, p)
		if !bytes.Equal(primary, opusN(n)) || p.hdr.SequenceNumber != uint16(100+n) {
			t.Fatalf("packet %d: seq %d primary % x", n, p.hdr.SequenceNumber, primary)
		}
		if want := min(n, redDepth); len(blocks) != want {
			t.Fatalf("packet %d: %d redundant blocks, want %d", n, len(blocks), want)
		}
		for i, b := range blocks {
			back := len(blocks) - i
			if !bytes.Equal(b.Data, opusN(n-back)) || int(b.TSOffset) != back*960 {
				t.Fatalf("packet %d block %d: % x at offset %d, want packet %d at %d", n, i, b.Data, b.TSOffset, n-back, back*960)
			}
		}
	}
}

// A publisher that sends RED (payload type 63 on its connection, Opus 109
// inside): every receiver gets its primary as Opus, and the RED receiver
// our own RED of those primaries. A RED payload that does not parse, or
// whose primary is not Opus, is dropped and counted.
func TestPublisherRED(t *testing.T) {
	up := NewUpTrack(UpTrackParams{Source: "a", Kind: webrtc.RTPCodecTypeAudio, SSRC: srcAudioSSRC, Codec: opusCodec,
		REDPayloadType: 63, OpusPayloadType: srcAudioPT})
	red, plain := &recorder{}, &recorder{}
	dRED, dPlain := NewDownTrack(up, "r1"), NewDownTrack(up, "r2")
	for _, b := range []struct {
		d   *DownTrack
		ctx *fakeContext
	}{{dRED, audioREDContext(1).withWriter(red)}, {dPlain, audioContext(2).withWriter(plain)}} {
		if _, err := b.d.Bind(b.ctx); err != nil {
			t.Fatal(err)
		}
		b.d.SetRED(true)
		up.AddDown(b.d)
	}
	for n := range 3 {
		var prev []media.REDBlock
		if n > 0 { // the publisher's own redundancy: discarded
			prev = []media.REDBlock{{PayloadType: srcAudioPT, TSOffset: 960, Data: []byte{0xee}}}
		}
		payload, err := media.AppendRED(nil, prev, srcAudioPT, opusN(n))
		if err != nil {
			t.Fatal(err)
		}
		feed(t, up, rtpPacket(t, srcAudioSSRC, 63, uint16(n), uint32(n*960), false, payload), t0)
	}
	for n, p := range plain.packets() {
		if p.hdr.PayloadType != 111 || !bytes.Equal(p.payload, opusN(n)) {
			t.Fatalf("plain receiver's packet %d: PT %d % x, want the primary as Opus", n, p.hdr.PayloadType, p.payload)
		}
	}
	if p := red.packets(); len(p) != 3 {
		t.Fatalf("%d packets to the RED receiver", len(p))
	} else if primary, blocks := decodeRED(t, p[2]); !bytes.Equal(primary, opusN(2)) || len(blocks) != 2 || !bytes.Equal(blocks[0].Data, opusN(0)) {
		t.Fatalf("RED receiver's third packet: primary % x, blocks %+v", primary, blocks)
	}

	var pkt Packet
	for _, bad := range [][]byte{
		{0x80 | srcAudioPT, 0, 0, 9, srcAudioPT, 1}, // a block past the end
		{0x80 | srcAudioPT, 0x0f, 0x00, 1, 0, 1, 2}, // primary not Opus
		{srcAudioPT}, // empty primary
	} {
		before := up.Stats().Malformed.Load()
		if up.parse(t0, rtpPacket(t, srcAudioSSRC, 63, 9, 9000, false, bad), &pkt, false) {
			t.Errorf("RED payload % x accepted", bad)
		}
		if up.Stats().Malformed.Load() != before+1 {
			t.Errorf("RED payload % x not counted as malformed", bad)
		}
	}
}

// An audio slot repeats only its current source's packets: the first
// packet after a switch carries nothing of the one before it, whose
// timestamps would fall among the former source's.
func TestAudioSlotRED(t *testing.T) {
	a, b := newAudioUpFrom("a", 0xa), newAudioUpFrom("b", 0xb)
	rec := &recorder{}
	d := NewAudioSlot("r", "audio-slot-0", opusCodec)
	if _, err := d.Bind(audioREDContext(5000).withWriter(rec)); err != nil {
		t.Fatal(err)
	}
	d.SetRED(true)
	at, seq := t0, uint16(0)
	send := func(n int) {
		for range n {
			feed(t, a, rtpPacket(t, 0xa, srcAudioPT, seq, uint32(seq)*960, false, opusN(int(seq))), at)
			feed(t, b, rtpPacket(t, 0xb, srcAudioPT, seq, uint32(seq)*960, false, opusN(int(seq)+1000)), at)
			seq, at = seq+1, at.Add(20*time.Millisecond)
		}
	}
	d.SetSource(a)
	send(4)
	d.SetSource(b)
	send(4)
	var got []int
	for _, p := range rec.packets() {
		_, blocks := decodeRED(t, p)
		got = append(got, len(blocks))
	}
	if want := []int{0, 1, 2, 2, 0, 1, 2, 2}; !slices.Equal(got, want) {
		t.Fatalf("redundant blocks per packet %v, want %v", got, want)
	}
}

// Building RED once per source packet and sending it to RED receivers, and
// plain Opus to the others, allocates nothing per packet.
func TestREDForwardDoesNotAllocate(t *testing.T) {
	up := newAudioUpFrom("a", 0xa)
	wRED, wPlain := &counter{}, &counter{}
	slot := NewAudioSlot("r", "audio-slot-0", opusCodec)
	if _, err := slot.Bind(audioREDContext(5000).withWriter(wRED)); err != nil {
		t.Fatal(err)
	}
	slot.SetRED(true)
	slot.SetSource(up)
	d := NewDownTrack(up, "r2")
	if _, err := d.Bind(audioContext(5001).withWriter(wPlain)); err != nil {
		t.Fatal(err)
	}
	up.AddDown(d)
	raw := rtpPacket(t, 0xa, srcAudioPT, 0, 0, false, opusFrame)
	var pkt Packet
	seq := uint16(0)
	step := func() {
		seq++
		ts := uint32(seq) * 960
		raw[2], raw[3] = byte(seq>>8), byte(seq)
		raw[4], raw[5], raw[6], raw[7] = byte(ts>>24), byte(ts>>16), byte(ts>>8), byte(ts)
		if up.parse(time.Now(), raw, &pkt, false) {
			up.forward(&pkt, up.testOut())
		}
	}
	if allocs := testing.AllocsPerRun(1000, step); allocs != 0 {
		t.Errorf("%v allocations per packet with RED, want 0", allocs)
	}
	// Three Opus payloads and RED's headers per packet: the measurement sent RED.
	if wRED.n < 1000 || wRED.bytes < wRED.n*(3*len(opusFrame)+9)*9/10 || wPlain.bytes != wPlain.n*len(opusFrame) {
		t.Errorf("RED receiver: %d packets, %d bytes; plain: %d packets, %d bytes", wRED.n, wRED.bytes, wPlain.n, wPlain.bytes)
	}
}
