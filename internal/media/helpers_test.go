package media

import (
	"encoding/hex"
	"strings"
	"testing"
)

// hx decodes hex written with spaces, so test packets can be laid out by
// field as in a capture.
func hx(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.Join(strings.Fields(s), ""))
	if err != nil {
		t.Fatalf("bad hex %q: %v", s, err)
	}
	return b
}

// Packets laid out like Chrome captures (ids as Chrome negotiates them:
// 1 ssrc-audio-level, 2 abs-send-time, 3 transport-wide-cc, 4 mid).
const (
	// Opus, marker set, one-byte extensions: audio level (V=1, 40 −dBov),
	// abs-send-time, transport-cc, then padding to a word boundary.
	pktOpus = "90 ef 1a 2b  00 01 e2 40  12 34 56 78" +
		" be de 00 03  10 a8 22 aa  bb cc 31 00  05 00 00 00" +
		" 78 0b e4 c1 36 ec c5 8d"
	// VP8 key frame start: X=1 S=1, I/L/T with a 15-bit picture id 0x0123,
	// TL0PICIDX 0x17, TID 0 Y=1; then the key frame tag and start code.
	pktVP8Key = "90 60 00 64  00 0f 42 40  ca fe ba be" +
		" be de 00 02  22 01 02 03  31 00 06 00" +
		" 90 e0 81 23 17 20" +
		" 50 42 00 9d 01 2a 80 02 e0 01"
	// Two-byte profile with application bits 0x3: a zero-length element
	// (id 7), a 20-byte element (id 200) and one padding byte.
	pktTwoByte = "90 60 00 01  00 00 00 01  00 00 00 02" +
		" 10 03 00 07  07 00 c8 14  00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f 10 11 12 13  00 00 00 00" +
		" 10 11 12"
	// Padding-only probe: P=1, no payload, 4 bytes of padding.
	pktPadding = "a0 60 00 02  00 00 00 01  00 00 00 03  00 00 00 04"
	// From a mixer: two CSRCs, payload then 2 bytes of padding.
	pktCSRC = "a2 08 ff ff  ff ff ff ff  00 00 00 04  11 11 11 11  22 22 22 22" +
		" d5 d5 d5 00 02"
	// Non-RFC 8285 profile 0xabac: one opaque word.
	pktGeneric = "90 00 00 05  00 00 00 00  00 00 00 05  ab ac 00 01  de ad be ef  01"
)
