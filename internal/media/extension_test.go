package media

import (
	"bytes"
	"testing"
)

func TestFindExtension(t *testing.T) {
	tests := []struct {
		name  string
		pkt   string
		id    uint8
		want  string
		found bool
	}{
		{"audio level", pktOpus, 1, "a8", true},
		{"abs-send-time", pktOpus, 2, "aa bb cc", true},
		{"transport-cc", pktOpus, 3, "00 05", true},
		{"absent", pktOpus, 4, "", false},
		{"id 0 never matches padding", pktOpus, 0, "", false},
		{"one-byte id 15 reserved", pktOpus, 15, "", false},
		{"two-byte zero length", pktTwoByte, 7, "", true},
		{"two-byte long", pktTwoByte, 200, "00 01 02 03 04 05 06 07 08 09 0a 0b 0c 0d 0e 0f 10 11 12 13", true},
		{"two-byte absent", pktTwoByte, 1, "", false},
		{"generic profile has no ids", pktGeneric, 1, "", false},
		{"no extension", pktPadding, 1, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := hx(t, tt.pkt)
			var h RTPHeader
			if err := ParseRTPHeader(b, &h); err != nil {
				t.Fatal(err)
			}
			got, ok := FindExtension(b, &h, tt.id)
			if ok != tt.found || !bytes.Equal(got, hx(t, tt.want)) {
				t.Fatalf("FindExtension(%d) = % x, %v; want %s, %v", tt.id, got, ok, tt.want, tt.found)
			}
			if ok && cap(got) != len(got) {
				t.Fatalf("result capacity %d exceeds length %d: appending would overwrite the packet", cap(got), len(got))
			}
		})
	}
}

// A header from another packet must not make FindExtension read outside b.
func TestFindExtensionMismatchedHeader(t *testing.T) {
	b := hx(t, pktTwoByte)
	var h RTPHeader
	if err := ParseRTPHeader(b, &h); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []RTPHeader{
		{Extension: true, ExtensionProfile: ProfileOneByte, ExtensionOffset: 40, ExtensionLen: 100},
		{Extension: true, ExtensionProfile: ProfileOneByte, ExtensionOffset: -1, ExtensionLen: 4},
		{Extension: true, ExtensionProfile: ProfileOneByte, ExtensionOffset: 4, ExtensionLen: -4},
		{Extension: true, ExtensionProfile: ProfileTwoByte, ExtensionOffset: len(b) + 1},
	} {
		if _, ok := FindExtension(b, &bad, 1); ok {
			t.Errorf("found an extension with header %+v", bad)
		}
	}
	// b truncated after parsing: the (now malformed) elements are rejected.
	if _, ok := FindExtension(b[:20], &h, 200); ok {
		t.Error("found id 200 in a truncated packet")
	}
}

func TestAudioLevel(t *testing.T) {
	tests := []struct {
		ext       string
		level     uint8
		voice, ok bool
	}{
		{"", 0, false, false},
		{"a8", 40, true, true},
		{"28", 40, false, true},
		{"7f", 127, false, true},
		{"80", 0, true, true},
		{"ff 00", 127, true, true}, // two-byte form with its pad byte
	}
	for _, tt := range tests {
		level, voice, ok := AudioLevel(hx(t, tt.ext))
		if level != tt.level || voice != tt.voice || ok != tt.ok {
			t.Errorf("AudioLevel(%s) = %d %v %v, want %d %v %v", tt.ext, level, voice, ok, tt.level, tt.voice, tt.ok)
		}
	}
}

func TestFindExtensionAllocs(t *testing.T) {
	b := hx(t, pktOpus)
	var h RTPHeader
	if err := ParseRTPHeader(b, &h); err != nil {
		t.Fatal(err)
	}
	a := testing.AllocsPerRun(100, func() {
		ext, _ := FindExtension(b, &h, 1)
		_, _, _ = AudioLevel(ext)
	})
	if a != 0 {
		t.Fatalf("FindExtension+AudioLevel allocates %v", a)
	}
}

func BenchmarkFindAudioLevel(b *testing.B) {
	pkt := hx(b, pktOpus)
	var h RTPHeader
	if err := ParseRTPHeader(pkt, &h); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		ext, _ := FindExtension(pkt, &h, 1)
		if _, _, ok := AudioLevel(ext); !ok {
			b.Fatal("no level")
		}
	}
}
