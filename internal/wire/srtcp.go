package wire

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/binary"
	"errors"

	"github.com/pion/rtcp"
	"github.com/pion/srtp/v3"
)

// RTCPSealer protects the SRTCP of one SSRC of ours: the packets we build
// (sender reports, transport-wide feedback) outside pion's SRTCP session.
// With the AEAD profiles (RFC 7714) it seals them itself: pion's context
// passes its additional data to cipher.AEAD as a slice of a local array,
// which escapes, one heap allocation per packet. Other profiles go through a
// pion context, which allocates nothing for them. Not safe for concurrent
// use; one sealer per SSRC, and no other context may protect that SSRC's
// SRTCP with the same keys (the index, and with GCM the nonce, would repeat).
type RTCPSealer struct {
	aead  cipher.AEAD // AEAD profiles; else ctx
	salt  [12]byte    // the SRTCP session salt
	index uint32      // the last packet's SRTCP index
	iv    [12]byte    // scratch, here so that it does not escape per packet
	aad   [12]byte    // scratch: the header's first 8 bytes, E flag and index
	ctx   *srtp.Context
	hdr   rtcp.Header
}

// SRTCP's layout (RFC 3711 section 3.4, RFC 7714 section 17).
const (
	srtcpHeader = 8          // the clear part: the first packet's header and SSRC
	srtcpIndexE = 0x80000000 // the E flag: the payload is encrypted
	srtcpMaxIdx = 0x7fffffff
	gcmTag      = 16
)

var (
	errShortRTCP      = errors.New("srtcp: packet shorter than an RTCP header")
	errSRTCPExhausted = errors.New("srtcp: 2^31 packets sealed with these keys")
)

// RTCPSealer is a new sealer for one SSRC of what we send.
func (k *Keys) RTCPSealer() (*RTCPSealer, error) {
	aead, salt, ctx, err := k.outbound(labelSRTCPKey, labelSRTCPSalt)
	if err != nil {
		return nil, err
	}
	return &RTCPSealer{aead: aead, salt: salt, ctx: ctx}, nil
}

// Seal appends compound RTCP packet plain, protected, to dst[:0] (give it
// room for len(plain)+Overhead+4 bytes, a Batch slot has it) and returns it.
func (s *RTCPSealer) Seal(dst, plain []byte) ([]byte, error) {
	if s.ctx != nil {
		return s.ctx.EncryptRTCP(dst, plain, &s.hdr)
	}
	if len(plain) < srtcpHeader {
		return nil, errShortRTCP
	}
	if s.index >= srtcpMaxIdx {
		return nil, errSRTCPExhausted // RFC 3711 section 9.2: new keys needed
	}
	s.index++
	gcmNonce(&s.iv, &s.salt, binary.BigEndian.Uint32(plain[4:]), s.index)
	// Section 17: the additional data is the clear header and the E flag with the index.
	copy(s.aad[:srtcpHeader], plain)
	binary.BigEndian.PutUint32(s.aad[srtcpHeader:], srtcpIndexE|s.index)
	dst = append(dst[:0], plain[:srtcpHeader]...)
	dst = s.aead.Seal(dst, s.iv[:], plain[srtcpHeader:], s.aad[:])
	return append(dst, s.aad[srtcpHeader:]...), nil
}

// RTCPOpener authenticates and decrypts the SRTCP a peer sends, with replay
// protection (RFC 3711 section 3.3.2: a window of 128 indexes per SSRC, as
// pion's inbound contexts have). With the AEAD profiles it opens them itself,
// for the reason RTCPSealer seals them; other profiles go through a pion
// context. Not safe for concurrent use.
type RTCPOpener struct {
	aead    cipher.AEAD // AEAD profiles; else ctx
	salt    [12]byte
	windows map[uint32]replayWindow // by SSRC, entered once a packet authenticated
	iv      [12]byte                // scratch, as in RTCPSealer
	aad     [12]byte
	clear   []byte // scratch: the additional data of a packet sent unencrypted
	ctx     *srtp.Context
	hdr     rtcp.Header
}

var (
	errSRTCPAuth   = errors.New("srtcp: authentication failed")
	errSRTCPReplay = errors.New("srtcp: replayed or too old index")
)

// RTCPOpener is a new opener of what the peer sends.
func (k *Keys) RTCPOpener() (*RTCPOpener, error) {
	aead, salt, ctx, err := k.inbound(labelSRTCPKey, labelSRTCPSalt)
	if err != nil {
		return nil, err
	}
	return &RTCPOpener{aead: aead, salt: salt, ctx: ctx, windows: map[uint32]replayWindow{}}, nil
}

// Open appends the compound RTCP packet in SRTCP packet b, authenticated and
// decrypted, to dst[:0] (which may be b[:0]: it decrypts in place) and
// returns it. A packet that fails authentication or repeats an index leaves
// the opener as it was.
func (o *RTCPOpener) Open(dst, b []byte) ([]byte, error) {
	if o.ctx != nil {
		return o.ctx.DecryptRTCP(dst, b, &o.hdr)
	}
	if len(b) < srtcpHeader+gcmTag+4 || b[0]>>6 != 2 {
		return nil, errShortRTCP
	}
	end := len(b) - 4 // the E flag and index follow the tag
	eIndex := binary.BigEndian.Uint32(b[end:])
	index := eIndex &^ srtcpIndexE
	ssrc := binary.BigEndian.Uint32(b[4:])
	w := o.windows[ssrc]
	if !w.check(uint64(index)) {
		return nil, errSRTCPReplay
	}
	gcmNonce(&o.iv, &o.salt, ssrc, index)
	n := end - gcmTag // the packet's length, clear
	if cap(dst) < n {
		dst = make([]byte, 0, n)
	}
	dst = dst[:0]
	if eIndex&srtcpIndexE != 0 {
		copy(o.aad[:srtcpHeader], b)
		binary.BigEndian.PutUint32(o.aad[srtcpHeader:], eIndex)
		dst = append(dst, o.aad[:srtcpHeader]...) // b's header, before b[:0] overwrites it
		if _, err := o.aead.Open(dst[srtcpHeader:srtcpHeader], o.iv[:], b[srtcpHeader:end], o.aad[:]); err != nil {
			return nil, errSRTCPAuth
		}
	} else {
		// Section 17: unencrypted, the whole packet and the index are authenticated.
		o.clear = append(append(o.clear[:0], b[:n]...), b[end:]...)
		if _, err := o.aead.Open(nil, o.iv[:], b[n:end], o.clear); err != nil {
			return nil, errSRTCPAuth
		}
		dst = append(dst, o.clear[:n]...)
	}
	w.accept(uint64(index))
	o.windows[ssrc] = w
	return dst[:n], nil
}

// gcmNonce sets iv for index of ssrc (RFC 7714 section 9.1): two zero
// bytes, the SSRC, two zero bytes and the index, XOR the salt.
func gcmNonce(iv, salt *[12]byte, ssrc, index uint32) {
	*iv = [12]byte{}
	binary.BigEndian.PutUint32(iv[2:], ssrc)
	binary.BigEndian.PutUint32(iv[8:], index)
	for i := range iv {
		iv[i] ^= salt[i]
	}
}

// replayWindow is pion's replay detector (replaydetector.New(128, max): SRTCP's
// 31-bit and SRTP's 48-bit indexes) as a value: the highest index accepted and
// which of the 128 up to it were. The zero window has accepted nothing and
// takes any index.
type replayWindow struct {
	top    uint64
	lo, hi uint64 // bit i: index top-i was accepted
}

func (w *replayWindow) check(i uint64) bool {
	if i > w.top {
		return true
	}
	d := w.top - i
	if d >= 128 {
		return false
	}
	if d < 64 {
		return w.lo&(1<<d) == 0
	}
	return w.hi&(1<<(d-64)) == 0
}

func (w *replayWindow) accept(i uint64) {
	if i > w.top {
		switch s := i - w.top; {
		case s >= 128:
			w.lo, w.hi = 0, 0
		case s >= 64:
			w.lo, w.hi = 0, w.lo<<(s-64)
		default:
			w.lo, w.hi = w.lo<<s, w.hi<<s|w.lo>>(64-s)
		}
		w.top = i
	}
	if d := w.top - i; d < 64 {
		w.lo |= 1 << d
	} else {
		w.hi |= 1 << (d - 64)
	}
}

// deriveSessionKey is SRTP's key derivation (RFC 3711 section 4.3.3, AES-CM
// as the PRF, key derivation rate 0): n bytes of label's session key.
func deriveSessionKey(label byte, masterKey, masterSalt []byte, n int) ([]byte, error) {
	block, err := aes.NewCipher(masterKey)
	if err != nil {
		return nil, err
	}
	var in [16]byte
	copy(in[:], masterSalt)
	in[7] ^= label
	out := make([]byte, (n+15)/16*16)
	for i := 0; i*16 < n; i++ {
		binary.BigEndian.PutUint16(in[14:], uint16(i))
		block.Encrypt(out[i*16:], in[:])
	}
	return out[:n], nil
}
