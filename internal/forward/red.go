package forward

import (
	"strconv"
	"strings"

	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/media"
)

// Redundant audio (RFC 2198 RED; docs/bwe.md). The SFU builds it itself
// from a source's consecutive Opus packets: each packet's RED payload is
// its own Opus payload after the one or two before it, so a receiver that
// loses a packet on its downlink finds it again in the next one. Built once
// per source packet, shared by every receiver that negotiated RED; the
// others get the plain Opus.

const (
	// redDepth is the most earlier packets a RED payload repeats: two
	// cover a loss of two packets in a row (a drop-tail queue's loss comes
	// in bursts), at three times the audio rate.
	redDepth = 2
	// redOpusPT is the Opus payload type inside the RED blocks we build:
	// the one our offers give Opus (peer.PayloadTypeOpus), so a receiver
	// whose connection numbers Opus otherwise gets plain Opus.
	redOpusPT = 111
	// redMaxPayload keeps a RED payload, with the RTP header, its
	// extensions and SRTP's tag, within one datagram of wire.SlotSize.
	redMaxPayload = 1200
	// redRing is the history kept, a power of two above redDepth: a packet
	// arriving out of order still finds the ones before it.
	redRing = 4
)

// redHistory is an audio source's recent Opus payloads and the RED payloads
// of its latest packet. Its UpTrack's rx lock owns it; it never allocates
// after newREDHistory.
type redHistory struct {
	seq  [redRing]uint16
	ts   [redRing]uint32
	held [redRing]bool
	data [redRing][]byte // capacity media.REDMaxBlock; longer payloads are not kept
	// out[k-1] is the latest packet's RED payload with k redundant blocks
	// (nil: not buildable, e.g. the packet before it never arrived).
	out    [redDepth][]byte
	outBuf [redDepth][]byte
	blocks [redDepth]media.REDBlock
}

func newREDHistory() *redHistory {
	h := &redHistory{}
	for i := range h.data {
		h.data[i] = make([]byte, 0, media.REDMaxBlock)
	}
	for i := range h.outBuf {
		h.outBuf[i] = make([]byte, 0, redMaxPayload)
	}
	return h
}

// add builds the RED payloads of the packet (seq, ts, its Opus payload)
// from the packets before it, then keeps it for the packets after.
func (h *redHistory) add(seq uint16, ts uint32, opus []byte) {
	h.out = [redDepth][]byte{}
	for k := 1; k <= redDepth; k++ {
		// The k packets before, oldest first.
		i := k - 1
		s := seq - uint16(k-1) - 1 // the oldest new to this payload
		slot := s % redRing
		off := ts - h.ts[slot]
		if !h.held[slot] || h.seq[slot] != s || off == 0 || off > media.REDMaxOffset {
			break // not consecutive, or too far back (DTX) for the offset field
		}
		copy(h.blocks[1:k], h.blocks[:k-1]) // the newer ones move after it
		h.blocks[0] = media.REDBlock{PayloadType: redOpusPT, TSOffset: uint16(off), Data: h.data[slot]}
		size := len(opus) + 1
		for _, b := range h.blocks[:k] {
			size += 4 + len(b.Data)
		}
		if size > redMaxPayload {
			break
		}
		out, err := media.AppendRED(h.outBuf[i][:0], h.blocks[:k], redOpusPT, opus)
		if err != nil {
			break
		}
		h.out[i] = out
	}
	slot := seq % redRing
	if h.held[slot] && int16(seq-h.seq[slot]) <= 0 {
		return // a late packet: the slot holds a newer one
	}
	if len(opus) > media.REDMaxBlock {
		h.held[slot] = false
		return
	}
	h.seq[slot], h.ts[slot], h.held[slot] = seq, ts, true
	h.data[slot] = append(h.data[slot][:0], opus...)
}

// payload is what a receiver gets of the latest packet: its RED payload
// with at most most redundant blocks (red: true), or the plain Opus.
func (h *redHistory) payload(opus []byte, most int) (p []byte, red bool) {
	for k := min(most, redDepth); k > 0; k-- {
		if h.out[k-1] != nil {
			return h.out[k-1], true
		}
	}
	return opus, false
}

// addAudio readies an audio packet for its destinations: a publisher's RED
// is forwarded as its primary Opus (we build our own RED, for every
// receiver the same), then the packet joins the history. It reports false
// for a RED payload that does not parse or holds no Opus primary.
func (u *UpTrack) addAudio(pkt *Packet) bool {
	if pt := u.p.REDPayloadType; pt != 0 && pkt.Header.PayloadType == pt {
		primary, _, err := media.ParseRED(pkt.Payload, nil)
		if err != nil || primary.PayloadType != u.p.OpusPayloadType || len(primary.Data) == 0 {
			return false
		}
		pkt.Payload = primary.Data
	}
	u.red.add(pkt.Header.SequenceNumber, pkt.Header.Timestamp, pkt.Payload)
	return true
}

// SetPlainAudio keeps RED from this DownTrack: its receiver decrypts frames
// end to end, and a RED payload holds several (the browser hands the whole
// payload to its decryptor, before splitting it). Call it before the track
// is negotiated.
func (d *DownTrack) SetPlainAudio() {
	d.mu.Lock()
	d.plainAudio = true
	d.mu.Unlock()
}

// redPayloadType is the payload type of RED for Opus of payload type opus
// among a receiver's negotiated codecs (0: none, or not the Opus our RED
// blocks name).
func redPayloadType(codecs []webrtc.RTPCodecParameters, opus webrtc.PayloadType) uint8 {
	if opus != redOpusPT {
		return 0
	}
	for _, c := range codecs {
		if !strings.EqualFold(c.MimeType, MimeTypeRED) {
			continue
		}
		// The fmtp names each block's payload type: "111/111".
		blocks := strings.Split(c.SDPFmtpLine, "/")
		ok := len(blocks) >= 2
		for _, b := range blocks {
			ok = ok && b == strconv.Itoa(int(opus))
		}
		if ok {
			return uint8(c.PayloadType)
		}
	}
	return 0
}

// MimeTypeRED is RFC 2198 redundant audio's MIME type.
const MimeTypeRED = "audio/red"

// SetRED lets RED through to a receiver that negotiated it (on) or sends
// it plain Opus: the room decides by the receiver's bandwidth (RED of two
// packets triples a voice's rate).
func (d *DownTrack) SetRED(on bool) { d.redOn.Store(on) }

// audioPayloadLocked is what d sends of an audio packet, at most most
// redundant blocks deep, and its payload type.
func (d *DownTrack) audioPayloadLocked(p *Packet, most int) ([]byte, uint8) {
	if d.redPT == 0 || !d.redOn.Load() || p.From == nil || p.From.red == nil {
		return p.Payload, d.pt
	}
	if payload, red := p.From.red.payload(p.Payload, most); red {
		return payload, d.redPT
	}
	return p.Payload, d.pt
}
