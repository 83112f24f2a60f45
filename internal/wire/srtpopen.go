package wire

import (
	"crypto/cipher"
	"encoding/binary"
	"errors"

	"github.com/pion/rtp"
	"github.com/pion/srtp/v3"
)

// RTPOpener authenticates and decrypts the SRTP a peer sends, with replay
// protection (a window of 128 packet indexes per SSRC, as pion's inbound
// contexts have). With the AEAD profiles it opens packets itself, in place:
// one AES-GCM call, with the rollover counter estimated per SSRC in a few
// words as pion does (pion's context looks its SSRC state up in a map,
// parses the header into a struct and shifts a big-integer window, for every
// packet). Other profiles go through a pion context. Not safe for concurrent
// use.
type RTPOpener struct {
	aead    cipher.AEAD // AEAD profiles; else ctx
	salt    [12]byte
	iv      [12]byte     // scratch, here so that it does not escape per packet
	streams []rtpInbound // per SSRC, entered once a packet authenticated or SetROC
	ctx     *srtp.Context
	hdr     rtp.Header // scratch for ctx
}

// rtpInbound is one SSRC's receive state (RFC 3711 section 3.3.1): the
// highest packet index accepted, and the replay window over indexes.
type rtpInbound struct {
	ssrc   uint32
	index  uint64 // rollover counter << 16 | highest sequence number
	seeded bool   // index holds a sequence number (pion: rolloverHasProcessed)
	window replayWindow
}

var (
	errSRTPAuth   = errors.New("srtp: authentication failed")
	errSRTPReplay = errors.New("srtp: replayed or too old index")
	errSRTPHeader = errors.New("srtp: malformed RTP header")
)

// RTPOpener is a new opener of the RTP the peer sends.
func (k *Keys) RTPOpener() (*RTPOpener, error) {
	aead, salt, ctx, err := k.inbound(labelSRTPKey, labelSRTPSalt)
	if err != nil {
		return nil, err
	}
	return &RTPOpener{aead: aead, salt: salt, ctx: ctx, streams: make([]rtpInbound, 0, 4)}, nil
}

// Open authenticates and decrypts SRTP packet b in place and returns the
// plain packet (a prefix of b). A packet that fails leaves the opener as it
// was, but not b: a failed AES-GCM open clears what it decrypted.
func (o *RTPOpener) Open(b []byte) ([]byte, error) {
	if o.ctx != nil {
		return o.ctx.DecryptRTP(b[:0], b, &o.hdr)
	}
	hl, ok := rtpHeaderLen(b)
	if !ok || len(b) < hl+gcmTag {
		return nil, errSRTPHeader
	}
	ssrc := binary.BigEndian.Uint32(b[8:])
	seq := binary.BigEndian.Uint16(b[2:])
	i := o.find(ssrc)
	var s rtpInbound // a new SSRC's state, entered only once a packet authenticates
	if i >= 0 {
		s = o.streams[i]
	}
	roc, diff := s.estimate(seq)
	index := uint64(roc)<<16 | uint64(seq)
	if !s.window.check(index) {
		return nil, errSRTPReplay
	}
	rtpNonce(&o.iv, &o.salt, ssrc, roc, seq) // the header is the additional data
	if _, err := o.aead.Open(b[hl:hl], o.iv[:], b[hl:], b[:hl]); err != nil {
		return nil, errSRTPAuth
	}
	s.window.accept(index)
	s.advance(seq, diff)
	if i >= 0 {
		o.streams[i] = s
	} else {
		s.ssrc = ssrc
		o.streams = append(o.streams, s)
	}
	return b[:len(b)-gcmTag], nil
}

// SetROC has ssrc's next packet taken with rollover counter roc, as pion's
// Context.SetROC: its sequence number is learned from that packet.
func (o *RTPOpener) SetROC(ssrc, roc uint32) {
	if o.ctx != nil {
		o.ctx.SetROC(ssrc, roc)
		return
	}
	i := o.find(ssrc)
	if i < 0 {
		o.streams = append(o.streams, rtpInbound{ssrc: ssrc})
		i = len(o.streams) - 1
	}
	o.streams[i].index, o.streams[i].seeded = uint64(roc)<<16, false
}

// Forget drops ssrc's state: a stream that ended, so that a connection's
// state is its live streams', not every SSRC it ever had.
func (o *RTPOpener) Forget(ssrc uint32) {
	if i := o.find(ssrc); i >= 0 {
		o.streams = append(o.streams[:i], o.streams[i+1:]...)
	}
}

func (o *RTPOpener) find(ssrc uint32) int {
	for i := range o.streams {
		if o.streams[i].ssrc == ssrc {
			return i
		}
	}
	return -1
}

// estimate is seq's rollover counter, and how far past the highest index
// it is, exactly as pion's srtpSSRCState.nextRolloverCount (so that our
// context and pion's accept the same packets): half the sequence space
// either side of the highest.
func (s *rtpInbound) estimate(seq uint16) (roc uint32, diff int64) {
	const seqMax, median = 1 << 16, 1 << 15
	roc = uint32(s.index >> 16)
	if !s.seeded {
		return roc, 0
	}
	cur, in := int64(s.index&(seqMax-1)), int64(seq)
	switch {
	case s.index <= median: // rollover counter 0, below the middle: no wrap back
		return roc, in - cur
	case cur < median && in-cur > median:
		return roc - 1, in - cur - seqMax
	case cur >= median && cur-median > in:
		return roc + 1, in - cur + seqMax
	default:
		return roc, in - cur
	}
}

// advance records an accepted packet (pion's updateRolloverCount).
func (s *rtpInbound) advance(seq uint16, diff int64) {
	switch {
	case !s.seeded:
		s.index |= uint64(seq)
		s.seeded = true
	case diff > 0:
		s.index += uint64(diff)
	}
}

// rtpHeaderLen is the length of b's RTP header: the fixed part, the CSRCs
// and the extension block (its words counted in its own header).
func rtpHeaderLen(b []byte) (int, bool) {
	if len(b) < 12 || b[0]>>6 != 2 {
		return 0, false
	}
	n := 12 + 4*int(b[0]&0x0f)
	if b[0]&0x10 != 0 {
		if len(b) < n+4 {
			return 0, false
		}
		n += 4 + 4*int(binary.BigEndian.Uint16(b[n+2:]))
	}
	return n, len(b) >= n
}
