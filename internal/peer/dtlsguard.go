package peer

import (
	"encoding/binary"
	"sync/atomic"
)

// DTLS 1.2 record layer (RFC 6347 4.1): content type, version (2), epoch (2),
// sequence number (6), length (2).
const (
	recordHeaderLen     = 13
	contentChangeCipher = 20
	contentHandshake    = 22
	firstDTLSByte       = 20 // RFC 7983: a datagram starting with 20..63 is DTLS
	lastDTLSByte        = 63
	recordEpochOffset   = 3
	recordLengthOffset  = 11
)

// plaintextNonHandshake reports whether datagram b is DTLS and holds a record
// in epoch 0 that is neither a handshake message nor a ChangeCipherSpec: an
// alert, application data or an unknown type, none of which is authenticated.
// It walks the records as pion's record layer splits a datagram; where the
// framing breaks, pion discards the whole datagram, so the walk stops there.
func plaintextNonHandshake(b []byte) bool {
	if len(b) == 0 || b[0] < firstDTLSByte || b[0] > lastDTLSByte {
		return false
	}
	for len(b) >= recordHeaderLen {
		typ := b[0]
		if binary.BigEndian.Uint16(b[recordEpochOffset:]) == 0 && typ != contentHandshake && typ != contentChangeCipher {
			return true
		}
		n := recordHeaderLen + int(binary.BigEndian.Uint16(b[recordLengthOffset:]))
		if n > len(b) {
			return false
		}
		b = b[n:]
	}
	return false
}

// guard drops forged plaintext DTLS records before pion reads them.
//
// SRTP keys come from DTLS, and pion (dtls v3.1.8) ends a connection on any
// alert it reads, even an epoch-0 close_notify nobody authenticated (and
// answers it with a genuine close_notify, so the peer ends too); epoch-0
// application data or a record of an unknown type makes it send the peer a
// genuine fatal alert. Anyone who can send one datagram with a participant's
// source address could so end that participant's media.
//
// Epoch 0 is unauthenticated. A peer's handshake messages and ChangeCipherSpec
// use it (and are retransmitted in it), so those pass; everything else in epoch
// 0 is dropped, from every address, at any time (RFC 6347 4.1.2.7, RFC 9147
// 4.5.2: invalid records are silently discarded). After its handshake a peer
// sends alerts only in its current epoch, 1 or later, which pion authenticates.
// Keying this on "the handshake with this address is done" would leave the
// participant's other candidate addresses open (pion takes DTLS from any
// address the peer's ICE checks came from, not only the selected pair's) and
// the handshake itself. What the drop costs: a peer that aborts a handshake with
// a plaintext alert is not heard; it has failed on its side and reconnects, and
// our half ends with the session it replaces or by the handshake's timeout.
//
// Media datagrams cost one byte comparison and nothing is allocated.
type guard struct {
	dropped atomic.Uint64
}

// drop reports whether datagram b must not reach pion, and counts it.
func (g *guard) drop(b []byte) bool {
	if !plaintextNonHandshake(b) {
		return false
	}
	g.dropped.Add(1)
	return true
}
