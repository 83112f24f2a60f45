package media

import (
	"bytes"
	"errors"
	"testing"
)

func TestParseRTPHeader(t *testing.T) {
	tests := []struct {
		name    string
		pkt     string
		want    RTPHeader
		payload string
	}{
		{"opus one-byte ext", pktOpus, RTPHeader{
			Marker: true, PayloadType: 111, SequenceNumber: 0x1a2b, Timestamp: 123456, SSRC: 0x12345678,
			Extension: true, ExtensionProfile: 0xbede, ExtensionOffset: 16, ExtensionLen: 12,
			PayloadOffset: 28, PayloadEnd: 36,
		}, "78 0b e4 c1 36 ec c5 8d"},
		{"vp8 key frame", pktVP8Key, RTPHeader{
			PayloadType: 96, SequenceNumber: 100, Timestamp: 1000000, SSRC: 0xcafebabe,
			Extension: true, ExtensionProfile: 0xbede, ExtensionOffset: 16, ExtensionLen: 8,
			PayloadOffset: 24, PayloadEnd: 40,
		}, "90 e0 81 23 17 20 50 42 00 9d 01 2a 80 02 e0 01"},
		{"two-byte ext", pktTwoByte, RTPHeader{
			PayloadType: 96, SequenceNumber: 1, Timestamp: 1, SSRC: 2,
			Extension: true, ExtensionProfile: 0x1003, ExtensionOffset: 16, ExtensionLen: 28,
			PayloadOffset: 44, PayloadEnd: 47,
		}, "10 11 12"},
		{"padding only", pktPadding, RTPHeader{
			PayloadType: 96, SequenceNumber: 2, Timestamp: 1, SSRC: 3,
			PayloadOffset: 12, PayloadEnd: 12, PaddingSize: 4,
		}, ""},
		{"csrc and padding", pktCSRC, RTPHeader{
			PayloadType: 8, SequenceNumber: 0xffff, Timestamp: 0xffffffff, SSRC: 4, CSRCCount: 2,
			PayloadOffset: 20, PayloadEnd: 23, PaddingSize: 2,
		}, "d5 d5 d5"},
		{"generic profile", pktGeneric, RTPHeader{
			SequenceNumber: 5, SSRC: 5,
			Extension: true, ExtensionProfile: 0xabac, ExtensionOffset: 16, ExtensionLen: 4,
			PayloadOffset: 20, PayloadEnd: 21,
		}, "01"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := hx(t, tt.pkt)
			var h RTPHeader
			if err := ParseRTPHeader(b, &h); err != nil {
				t.Fatalf("ParseRTPHeader: %v", err)
			}
			if h != tt.want {
				t.Errorf("header\n got %+v\nwant %+v", h, tt.want)
			}
			if got := h.Payload(b); !bytes.Equal(got, hx(t, tt.payload)) {
				t.Errorf("payload % x, want %s", got, tt.payload)
			}
			crossCheckRTP(t, b, &h, nil)
		})
	}
}

func TestCSRC(t *testing.T) {
	b := hx(t, pktCSRC)
	var h RTPHeader
	if err := ParseRTPHeader(b, &h); err != nil {
		t.Fatal(err)
	}
	if h.CSRC(b, 0) != 0x11111111 || h.CSRC(b, 1) != 0x22222222 {
		t.Fatalf("CSRCs %x %x", h.CSRC(b, 0), h.CSRC(b, 1))
	}
}

func TestParseRTPHeaderErrors(t *testing.T) {
	tests := []struct {
		name string
		pkt  string
		want error
	}{
		{"empty", "", ErrShortPacket},
		{"11 bytes", "80 60 00 01 00 00 00 01 00 00 00", ErrShortPacket},
		{"version 0", "00 60 00 01  00 00 00 01  00 00 00 02", ErrBadVersion},
		{"version 1", "40 60 00 01  00 00 00 01  00 00 00 02", ErrBadVersion},
		{"version 3", "c0 60 00 01  00 00 00 01  00 00 00 02", ErrBadVersion},
		{"csrc truncated", "83 60 00 01  00 00 00 01  00 00 00 02  00 00 00 01  00 00 00 02", ErrShortPacket},
		{"ext header truncated", "90 60 00 01  00 00 00 01  00 00 00 02  be de 00", ErrShortPacket},
		{"ext block truncated", "90 60 00 01  00 00 00 01  00 00 00 02  be de 00 02  10 aa 00 00", ErrShortPacket},
		{"one-byte element overruns block", "90 60 00 01  00 00 00 01  00 00 00 02  be de 00 01  10 aa 23 00", ErrBadExtension},
		{"two-byte length missing", "90 60 00 01  00 00 00 01  00 00 00 02  10 00 00 01  00 00 00 05", ErrBadExtension},
		{"two-byte element overruns block", "90 60 00 01  00 00 00 01  00 00 00 02  10 00 00 01  05 03 aa bb", ErrBadExtension},
		{"padding count zero", "a0 60 00 01  00 00 00 01  00 00 00 02  aa 00", ErrBadPadding},
		{"padding longer than payload", "a0 60 00 01  00 00 00 01  00 00 00 02  aa 03", ErrBadPadding},
		{"padding bit, no bytes", "a0 60 00 01  00 00 00 01  00 00 00 02", ErrShortPacket},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := hx(t, tt.pkt)
			var h RTPHeader
			if err := ParseRTPHeader(b, &h); !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			crossCheckRTP(t, b, &h, ParseRTPHeader(b, &h))
		})
	}
}

// One-byte processing stops at id 15 (RFC 8285 4.2), so malformed bytes
// after it are not an error and later elements are not found.
func TestExtensionID15StopsProcessing(t *testing.T) {
	b := hx(t, "90 60 00 01  00 00 00 01  00 00 00 02  be de 00 02  10 aa f0 2f  ff 00 00 00")
	var h RTPHeader
	if err := ParseRTPHeader(b, &h); err != nil {
		t.Fatal(err)
	}
	if v, ok := FindExtension(b, &h, 1); !ok || !bytes.Equal(v, []byte{0xaa}) {
		t.Fatalf("id 1 = % x %v", v, ok)
	}
	if _, ok := FindExtension(b, &h, 2); ok {
		t.Fatal("found id 2 after id 15")
	}
	crossCheckRTP(t, b, &h, nil)
}

func TestParseRTPHeaderAllocs(t *testing.T) {
	b := hx(t, pktVP8Key)
	var h RTPHeader
	if a := testing.AllocsPerRun(100, func() { _ = ParseRTPHeader(b, &h) }); a != 0 {
		t.Fatalf("ParseRTPHeader allocates %v", a)
	}
	short := b[:5]
	if a := testing.AllocsPerRun(100, func() { _ = ParseRTPHeader(short, &h) }); a != 0 {
		t.Fatalf("ParseRTPHeader error path allocates %v", a)
	}
}

func BenchmarkParseRTPHeader(b *testing.B) {
	pkt := hx(b, pktOpus)
	var h RTPHeader
	b.ReportAllocs()
	b.SetBytes(int64(len(pkt)))
	for b.Loop() {
		if err := ParseRTPHeader(pkt, &h); err != nil {
			b.Fatal(err)
		}
	}
}

func TestIsRTP(t *testing.T) {
	for _, c := range []struct {
		name string
		b    []byte
		want bool
	}{
		{"VP8", hx(t, pktVP8Key), true},
		{"RTCP receiver report", []byte{0x81, 201, 0, 7, 0, 0, 0, 1, 0, 0, 0, 2}, false},
		{"RTCP at payload type 64 with marker", []byte{0x80, 0xc0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1}, false},
		{"payload type 96", []byte{0x80, 96, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1}, true},
		{"STUN", []byte{0x00, 0x01, 0, 0, 0x21, 0x12, 0xa4, 0x42, 0, 0, 0, 0}, false},
		{"DTLS", []byte{0x16, 0xfe, 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0}, false},
		{"short", []byte{0x80, 96, 0, 1}, false},
	} {
		if got := IsRTP(c.b); got != c.want {
			t.Errorf("%s: IsRTP %v, want %v", c.name, got, c.want)
		}
	}
}

// An SRTP packet's padding and its count are encrypted, and its last bytes are
// the authentication tag: the header is still read.
func TestParseSRTPHeaderIgnoresThePadding(t *testing.T) {
	b := hx(t, pktPadding)
	b[len(b)-1] = 0xff // what the tag might hold: more padding than the packet
	var h RTPHeader
	if ParseRTPHeader(b, &h) == nil {
		t.Fatal("RTP header with an impossible padding count accepted")
	}
	if err := ParseSRTPHeader(b, &h); err != nil {
		t.Fatalf("SRTP header refused: %v", err)
	}
	if h.PaddingSize != 0 || h.PayloadEnd != len(b) {
		t.Errorf("padding %d, payload end %d of %d bytes: want no padding read", h.PaddingSize, h.PayloadEnd, len(b))
	}
}
