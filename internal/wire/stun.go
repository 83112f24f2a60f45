package wire

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"hash"
	"hash/crc32"
	"net/netip"
)

// STUN for ICE consent on the data plane (RFC 8489 messages, RFC 8445 checks,
// RFC 7675 consent): a parser of the binding messages a peer sends on its
// selected pair and builders of the few the data plane sends, with short-term
// credentials. Nothing here allocates once a STUNKey exists.

// STUN message types used by ICE.
const (
	STUNBindingRequest    uint16 = 0x0001
	STUNBindingIndication uint16 = 0x0011
	STUNBindingSuccess    uint16 = 0x0101
)

// STUNHeaderLen is the fixed header: type, length, magic cookie, transaction id.
const STUNHeaderLen = 20

const (
	stunMagicCookie = 0x2112A442
	fingerprintXOR  = 0x5354554e

	attrUsername         = 0x0006
	attrMessageIntegrity = 0x0008
	attrXORMappedAddress = 0x0020
	attrPriority         = 0x0024
	attrUseCandidate     = 0x0025
	attrFingerprint      = 0x8028
	attrICEControlled    = 0x8029
	attrICEControlling   = 0x802A

	integrityLen   = sha1.Size
	fingerprintLen = 4
)

// Errors of ParseSTUN.
var (
	ErrNotSTUN       = errors.New("stun: not a STUN message")
	ErrSTUNMalformed = errors.New("stun: malformed attributes")
)

// IsSTUN reports whether b looks like a STUN message (RFC 8489 section 5: the
// two top bits zero and the magic cookie; RFC 7983 demultiplexing).
func IsSTUN(b []byte) bool {
	return len(b) >= STUNHeaderLen && b[0] < 4 && binary.BigEndian.Uint32(b[4:]) == stunMagicCookie
}

// STUNMessage is what the data plane reads of a binding message. Its slices
// and offsets point into the datagram it was parsed from.
type STUNMessage struct {
	Type         uint16
	TxID         []byte // 12 bytes
	Username     []byte // nil if absent
	UseCandidate bool
	Controlling  bool // ICE-CONTROLLING present
	Controlled   bool // ICE-CONTROLLED present
	integrity    int  // offset of the MESSAGE-INTEGRITY attribute, 0 if absent
	fingerprint  int  // offset of the FINGERPRINT attribute, 0 if absent
}

// ParseSTUN reads the header and attributes of STUN message b. Attributes after
// MESSAGE-INTEGRITY other than FINGERPRINT are ignored (RFC 8489 section
// 14.5); FINGERPRINT must be last.
func ParseSTUN(b []byte) (STUNMessage, error) {
	var m STUNMessage
	if !IsSTUN(b) {
		return m, ErrNotSTUN
	}
	size := int(binary.BigEndian.Uint16(b[2:]))
	if size%4 != 0 || STUNHeaderLen+size != len(b) {
		return m, ErrSTUNMalformed
	}
	m.Type = binary.BigEndian.Uint16(b)
	m.TxID = b[8:STUNHeaderLen]
	for off := STUNHeaderLen; off < len(b); {
		if len(b)-off < 4 {
			return STUNMessage{}, ErrSTUNMalformed
		}
		typ := binary.BigEndian.Uint16(b[off:])
		n := int(binary.BigEndian.Uint16(b[off+2:]))
		next := off + 4 + (n+3)&^3
		if next > len(b) {
			return STUNMessage{}, ErrSTUNMalformed
		}
		if m.fingerprint != 0 {
			return STUNMessage{}, ErrSTUNMalformed // something after FINGERPRINT
		}
		value := b[off+4 : off+4+n]
		switch {
		case typ == attrFingerprint:
			if n != fingerprintLen {
				return STUNMessage{}, ErrSTUNMalformed
			}
			m.fingerprint = off
		case m.integrity != 0:
			// ignored: after MESSAGE-INTEGRITY
		case typ == attrMessageIntegrity:
			if n != integrityLen {
				return STUNMessage{}, ErrSTUNMalformed
			}
			m.integrity = off
		case typ == attrUsername:
			m.Username = value
		case typ == attrUseCandidate:
			m.UseCandidate = true
		case typ == attrICEControlling:
			m.Controlling = true
		case typ == attrICEControlled:
			m.Controlled = true
		}
		off = next
	}
	return m, nil
}

// STUNKey signs and checks MESSAGE-INTEGRITY with one short-term password
// (an ICE password). Not safe for concurrent use.
type STUNKey struct {
	mac hash.Hash
	hdr [STUNHeaderLen]byte
	sum [integrityLen]byte
}

// NewSTUNKey is the key of ICE password pwd.
func NewSTUNKey(pwd string) *STUNKey {
	k := &STUNKey{mac: hmac.New(sha1.New, []byte(pwd))}
	k.sign(make([]byte, STUNHeaderLen), STUNHeaderLen) // the HMAC saves its pads on first use
	return k
}

// sign is the HMAC of message b's bytes before offset end, with the header's
// length as if the message ended with a MESSAGE-INTEGRITY attribute at end.
func (k *STUNKey) sign(b []byte, end int) []byte {
	copy(k.hdr[:], b[:STUNHeaderLen])
	binary.BigEndian.PutUint16(k.hdr[2:], uint16(end+4+integrityLen-STUNHeaderLen))
	k.mac.Reset()
	k.mac.Write(k.hdr[:])
	k.mac.Write(b[STUNHeaderLen:end])
	return k.mac.Sum(k.sum[:0])
}

// Authentic reports whether message b (parsed as m) carries a FINGERPRINT and
// a MESSAGE-INTEGRITY that k signed.
func (m *STUNMessage) Authentic(b []byte, k *STUNKey) bool {
	if m.integrity == 0 || m.fingerprint == 0 || !m.fingerprintOK(b) {
		return false
	}
	return hmac.Equal(k.sign(b, m.integrity), b[m.integrity+4:m.integrity+4+integrityLen])
}

func (m *STUNMessage) fingerprintOK(b []byte) bool {
	want := binary.BigEndian.Uint32(b[m.fingerprint+4:])
	return fingerprint(b[:m.fingerprint]) == want
}

// fingerprint is the FINGERPRINT value of a message whose bytes before the
// attribute are b, with the header's length counted as if the message ended
// with that attribute (whatever b's header says).
func fingerprint(b []byte) uint32 {
	size := uint16(len(b) + 4 + fingerprintLen - STUNHeaderLen)
	// The first four bytes by hand: a local array handed to crc32 would escape.
	crc := ^uint32(0)
	for _, v := range [4]byte{b[0], b[1], byte(size >> 8), byte(size)} {
		crc = crc32.IEEETable[byte(crc)^v] ^ crc>>8
	}
	crc = crc32.Update(^crc, crc32.IEEETable, b[4:])
	return crc ^ fingerprintXOR
}

// AppendBindingSuccess appends the answer to binding request txID from
// mapped: XOR-MAPPED-ADDRESS, MESSAGE-INTEGRITY signed with k (our password),
// FINGERPRINT.
func AppendBindingSuccess(dst, txID []byte, mapped netip.AddrPort, k *STUNKey) []byte {
	start := len(dst)
	dst = appendSTUNHeader(dst, STUNBindingSuccess, txID)
	ip := mapped.Addr().Unmap()
	family, addr := byte(1), ip.As16()
	n := 4
	if ip.Is6() {
		family, n = 2, 16
	} else {
		a4 := ip.As4()
		copy(addr[:4], a4[:])
	}
	dst = appendAttrHeader(dst, attrXORMappedAddress, 4+n)
	dst = append(dst, 0, family)
	dst = binary.BigEndian.AppendUint16(dst, mapped.Port()^uint16(stunMagicCookie>>16))
	var mask [16]byte
	binary.BigEndian.PutUint32(mask[:], stunMagicCookie)
	copy(mask[4:], txID)
	for i := range n {
		dst = append(dst, addr[i]^mask[i])
	}
	return finishSTUN(dst, start, k)
}

// AppendBindingRequest appends a consent check (RFC 7675: an ICE connectivity
// check on the selected pair): USERNAME, PRIORITY, our role with its
// tie-breaker, MESSAGE-INTEGRITY signed with k (the peer's password),
// FINGERPRINT.
func AppendBindingRequest(dst, txID []byte, username string, priority uint32, controlling bool, tieBreaker uint64, k *STUNKey) []byte {
	start := len(dst)
	dst = appendSTUNHeader(dst, STUNBindingRequest, txID)
	dst = appendAttrHeader(dst, attrUsername, len(username))
	dst = append(dst, username...)
	for range (4 - len(username)%4) % 4 {
		dst = append(dst, 0)
	}
	dst = appendAttrHeader(dst, attrPriority, 4)
	dst = binary.BigEndian.AppendUint32(dst, priority)
	role := uint16(attrICEControlled)
	if controlling {
		role = attrICEControlling
	}
	dst = appendAttrHeader(dst, role, 8)
	dst = binary.BigEndian.AppendUint64(dst, tieBreaker)
	return finishSTUN(dst, start, k)
}

// AppendBindingIndication appends an attribute-free binding indication
// (RFC 8445 section 11: an ICE keepalive).
func AppendBindingIndication(dst, txID []byte) []byte {
	return appendSTUNHeader(dst, STUNBindingIndication, txID)
}

func appendSTUNHeader(dst []byte, typ uint16, txID []byte) []byte {
	dst = binary.BigEndian.AppendUint16(dst, typ)
	dst = append(dst, 0, 0)
	dst = binary.BigEndian.AppendUint32(dst, stunMagicCookie)
	var id [12]byte
	copy(id[:], txID)
	return append(dst, id[:]...)
}

func appendAttrHeader(dst []byte, typ uint16, n int) []byte {
	dst = binary.BigEndian.AppendUint16(dst, typ)
	return binary.BigEndian.AppendUint16(dst, uint16(n))
}

// finishSTUN signs the message that starts at dst[start:] and ends it with
// its FINGERPRINT, setting the header's length.
func finishSTUN(dst []byte, start int, k *STUNKey) []byte {
	msg := dst[start:]
	mac := k.sign(msg, len(msg))
	dst = appendAttrHeader(dst, attrMessageIntegrity, integrityLen)
	dst = append(dst, mac...)
	msg = dst[start:]
	binary.BigEndian.PutUint16(msg[2:], uint16(len(msg)+4+fingerprintLen-STUNHeaderLen))
	fp := fingerprint(msg)
	dst = appendAttrHeader(dst, attrFingerprint, fingerprintLen)
	return binary.BigEndian.AppendUint32(dst, fp)
}
