package wire

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/binary"
	"errors"

	"github.com/pion/rtp"
	"github.com/pion/srtp/v3"
)

// RTPSealer protects the RTP of one owner's SSRCs (a destination's media and
// retransmission SSRCs). With the AEAD profiles (RFC 7714) it seals packets
// itself: one AES-GCM call on the marshalled header and payload, with the
// rollover counter kept per SSRC in a few words (pion's context looks its
// SSRC state up in a map and parses the header again, for every packet).
// Other profiles go through a pion context. Not safe for concurrent use;
// every SSRC is protected by exactly one sealer, or its index (and with GCM
// the nonce) would repeat.
type RTPSealer struct {
	aead    cipher.AEAD // AEAD profiles; else ctx
	salt    [12]byte    // the SRTP session salt
	iv      [12]byte    // scratch, here so that it does not escape per packet
	indexes []rtpIndex  // per SSRC; most owners have one or two, held in inline
	inline  [2]rtpIndex // in the sealer's own cache lines, not a line elsewhere per packet
	ctx     *srtp.Context
	hdr     rtp.Header // scratch for ctx
	copy    []byte     // scratch for ctx: plain moved out of dst's way
}

// rtpIndex is one SSRC's packet index as its sender keeps it (RFC 3711
// section 3.3.1): the rollover counter and the highest sequence number sent.
type rtpIndex struct {
	ssrc    uint32
	roc     uint32
	last    uint16
	started bool
}

var errShortRTP = errors.New("srtp: packet shorter than its RTP header")

// RTPSealer is a new sealer for SSRCs of what we send; sealers of keys a
// Route holds share the connection's session AEAD.
func (k *Keys) RTPSealer() (*RTPSealer, error) {
	if s := k.rtpSealing; s != nil {
		return newRTPSealer(s.aead, s.salt, nil), nil
	}
	aead, salt, ctx, err := k.outbound(labelSRTPKey, labelSRTPSalt)
	if err != nil {
		return nil, err
	}
	return newRTPSealer(aead, salt, ctx), nil
}

func newRTPSealer(aead cipher.AEAD, salt [12]byte, ctx *srtp.Context) *RTPSealer {
	s := &RTPSealer{aead: aead, salt: salt, ctx: ctx}
	s.indexes = s.inline[:0]
	return s
}

// Seal protects RTP packet plain, whose header (extensions included) is its
// first headerLen bytes, into dst[:0] (give it room for len(plain)+Overhead
// bytes: a Batch slot has it) and returns it. plain may be dst's first bytes:
// the packet is then sealed in place.
func (s *RTPSealer) Seal(dst, plain []byte, headerLen int) ([]byte, error) {
	if s.ctx != nil {
		if len(plain) > 0 && cap(dst) > 0 && &dst[:1][0] == &plain[0] {
			s.copy = append(s.copy[:0], plain...) // pion's context is not documented to seal in place
			plain = s.copy
		}
		return s.ctx.EncryptRTP(dst[:0], plain, &s.hdr)
	}
	if headerLen < 12 || len(plain) < headerLen {
		return nil, errShortRTP
	}
	s.nonce(plain)
	// In place, the header copies onto itself and the payload is encrypted
	// where it is: AES-GCM allows output that overlaps its input exactly.
	dst = append(dst[:0], plain[:headerLen]...)
	return s.aead.Seal(dst, s.iv[:], plain[headerLen:], plain[:headerLen]), nil
}

// SealAfter protects the RTP packet whose header is header (its extensions
// included, at the start of the buffer the datagram goes in: give it room
// for the payload and Overhead after it) and whose payload is payload,
// wherever that is: AES-GCM reads the payload where it lies and writes it
// encrypted after the header, with no copy before. It returns the datagram.
func (s *RTPSealer) SealAfter(header, payload []byte) ([]byte, error) {
	if len(header) < 12 {
		return nil, errShortRTP
	}
	if cap(header)-len(header) < len(payload)+Overhead {
		return nil, errNoRoom
	}
	if s.ctx != nil {
		return s.Seal(header, append(header, payload...), len(header))
	}
	s.nonce(header)
	return s.aead.Seal(header, s.iv[:], payload, header), nil
}

var errNoRoom = errors.New("srtp: no room for the payload after the header")

// nonce sets s.iv for the packet whose header starts plain (rtpNonce),
// advancing its SSRC's index; the header is the additional data.
func (s *RTPSealer) nonce(plain []byte) {
	ssrc, seq := binary.BigEndian.Uint32(plain[8:]), binary.BigEndian.Uint16(plain[2:])
	rtpNonce(&s.iv, &s.salt, ssrc, s.index(ssrc).next(seq), seq)
}

// rtpNonce sets iv for packet seq of ssrc under rollover counter roc (RFC
// 7714 section 8.1): two zero bytes, the SSRC, the rollover counter and the
// sequence number, XOR the salt. SRTCP's is gcmNonce.
func rtpNonce(iv, salt *[12]byte, ssrc, roc uint32, seq uint16) {
	*iv = [12]byte{}
	binary.BigEndian.PutUint32(iv[2:], ssrc)
	binary.BigEndian.PutUint32(iv[6:], roc)
	binary.BigEndian.PutUint16(iv[10:], seq)
	for i := range iv {
		iv[i] ^= salt[i]
	}
}

// index is ssrc's index state, made at its first packet.
func (s *RTPSealer) index(ssrc uint32) *rtpIndex {
	for i := range s.indexes {
		if s.indexes[i].ssrc == ssrc {
			return &s.indexes[i]
		}
	}
	s.indexes = append(s.indexes, rtpIndex{ssrc: ssrc})
	return &s.indexes[len(s.indexes)-1]
}

// next is the rollover counter of sequence number seq, sent after the
// highest so far (a wrap counts) or before it (a retransmission on the same
// SSRC: from before a wrap, the previous counter).
func (x *rtpIndex) next(seq uint16) uint32 {
	if !x.started {
		x.started, x.last = true, seq
		return 0
	}
	if d := int16(seq - x.last); d >= 0 {
		if seq < x.last {
			x.roc++
		}
		x.last = seq
		return x.roc
	}
	if seq > x.last && x.roc > 0 {
		return x.roc - 1
	}
	return x.roc
}

// The session keys' labels (RFC 3711 section 4.3.1, RFC 7714 section 11).
const (
	labelSRTPKey, labelSRTPSalt   = 0x00, 0x02
	labelSRTCPKey, labelSRTCPSalt = 0x03, 0x05
)

// outbound is what protects what we send under the session keys of keyLabel
// and saltLabel: the AES-GCM and salt of an AEAD profile, else a pion context.
func (k *Keys) outbound(keyLabel, saltLabel byte) (cipher.AEAD, [12]byte, *srtp.Context, error) {
	aead, salt, err := sessionAEAD(k.Profile, keyLabel, saltLabel, k.LocalKey, k.LocalSalt)
	if err != nil || aead != nil {
		return aead, salt, nil, err
	}
	ctx, err := k.Outbound()
	return nil, salt, ctx, err
}

// inbound is what opens what the peer sends under the session keys of
// keyLabel and saltLabel: the AES-GCM and salt of an AEAD profile, else a
// pion context (with replay protection).
func (k *Keys) inbound(keyLabel, saltLabel byte) (cipher.AEAD, [12]byte, *srtp.Context, error) {
	aead, salt, err := sessionAEAD(k.Profile, keyLabel, saltLabel, k.RemoteKey, k.RemoteSalt)
	if err != nil || aead != nil {
		return aead, salt, nil, err
	}
	ctx, err := k.Inbound()
	return nil, salt, ctx, err
}

// sessionAEAD is the AES-GCM under the session key of label keyLabel and
// the salt of saltLabel, for an AEAD profile (nil for the others).
func sessionAEAD(profile srtp.ProtectionProfile, keyLabel, saltLabel byte, masterKey, masterSalt []byte) (cipher.AEAD, [12]byte, error) {
	var salt [12]byte
	switch profile {
	case srtp.ProtectionProfileAeadAes128Gcm, srtp.ProtectionProfileAeadAes256Gcm:
	default:
		return nil, salt, nil
	}
	key, err := deriveSessionKey(keyLabel, masterKey, masterSalt, len(masterKey))
	if err != nil {
		return nil, salt, err
	}
	s, err := deriveSessionKey(saltLabel, masterKey, masterSalt, len(salt))
	if err != nil {
		return nil, salt, err
	}
	copy(salt[:], s)
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, salt, err
	}
	aead, err := cipher.NewGCM(block)
	return aead, salt, err
}
