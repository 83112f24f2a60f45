package media

import (
	"bytes"
	"errors"
	"testing"
)

// VP8 payloads (descriptor + start of the VP8 data) as browsers send them.
var vp8Seeds = []string{
	"10 50 42 00 9d 01 2a 80 02 e0 01", // no X, key frame start
	"90 e0 81 23 17 20 50 42 00 9d",    // Chrome: 15-bit id, TL0, TID/Y
	"90 80 2a 51 2f 00",                // 7-bit id, inter frame
	"80 80 81 23 aa bb",                // continuation
	"90 30 a5 50",                      // T and K
	"90 f0 ff ff 00 ff 50",             // everything present, all ones
}

func TestParseVP8(t *testing.T) {
	tests := []struct {
		name string
		b    string
		want VP8Descriptor
		key  bool
	}{
		{"no X, key frame", "10 50 42 00 9d 01 2a 80 02 e0 01",
			VP8Descriptor{Start: true, HeaderLen: 1}, true},
		{"chrome key frame", "90 e0 81 23 17 20 50 42 00 9d",
			VP8Descriptor{Extended: true, Start: true, HasPictureID: true, HasTL0PICIDX: true, HasTID: true,
				PictureID: 0x0123, PictureIDBits: 15, TL0PICIDX: 0x17, LayerSync: true, HeaderLen: 6}, true},
		{"7-bit picture id, inter frame", "90 80 2a 51 2f 00",
			VP8Descriptor{Extended: true, Start: true, HasPictureID: true, PictureID: 42, PictureIDBits: 7, HeaderLen: 3}, false},
		{"continuation", "80 80 81 23 aa bb",
			VP8Descriptor{Extended: true, HasPictureID: true, PictureID: 0x0123, PictureIDBits: 15, HeaderLen: 4}, false},
		{"K only ignores TID bits", "90 10 c5 50",
			VP8Descriptor{Extended: true, Start: true, HasKEYIDX: true, KEYIDX: 5, HeaderLen: 3}, true},
		{"T and K", "90 30 a5 51",
			VP8Descriptor{Extended: true, Start: true, HasTID: true, HasKEYIDX: true, TID: 2, LayerSync: true, KEYIDX: 5, HeaderLen: 3}, false},
		{"T only ignores KEYIDX bits", "80 20 5f 51",
			VP8Descriptor{Extended: true, HasTID: true, TID: 1, HeaderLen: 3}, false},
		{"non-reference", "b0 00 50",
			VP8Descriptor{Extended: true, NonReference: true, Start: true, HeaderLen: 2}, true},
		{"later partition start", "13 50",
			VP8Descriptor{Start: true, PartitionID: 3, HeaderLen: 1}, false},
		{"descriptor only", "90 80 05",
			VP8Descriptor{Extended: true, Start: true, HasPictureID: true, PictureID: 5, PictureIDBits: 7, HeaderLen: 3}, false},
		{"all ones", "ff ff ff ff ff ff ff",
			VP8Descriptor{Extended: true, NonReference: true, Start: true, PartitionID: 7,
				HasPictureID: true, HasTL0PICIDX: true, HasTID: true, HasKEYIDX: true,
				PictureID: 0x7fff, PictureIDBits: 15, TL0PICIDX: 0xff, TID: 3, LayerSync: true, KEYIDX: 31, HeaderLen: 6}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := hx(t, tt.b)
			var d VP8Descriptor
			err := ParseVP8(b, &d)
			if err != nil {
				t.Fatalf("ParseVP8: %v", err)
			}
			tt.want.keyframe = tt.key
			if d != tt.want {
				t.Errorf("\n got %+v\nwant %+v", d, tt.want)
			}
			if d.IsKeyframe() != tt.key {
				t.Errorf("IsKeyframe = %v, want %v", d.IsKeyframe(), tt.key)
			}
			crossCheckVP8(t, b, &d, err)
		})
	}
}

func TestParseVP8Errors(t *testing.T) {
	for _, s := range []string{
		"",         // empty
		"80",       // X, no extension byte
		"80 80",    // I, no picture id
		"80 80 80", // 15-bit picture id cut
		"80 40",    // L, no TL0PICIDX
		"80 20",    // T, no TID byte
		"80 10",    // K, no KEYIDX byte
		"80 c0 05", // I and L, TL0PICIDX missing
		"80 f0 85 01 02",
	} {
		b := hx(t, s)
		var d VP8Descriptor
		err := ParseVP8(b, &d)
		if !errors.Is(err, ErrShortPacket) {
			t.Errorf("ParseVP8(%s) = %v, want ErrShortPacket", s, err)
		}
		crossCheckVP8(t, b, &d, err)
	}
}

func TestSetVP8(t *testing.T) {
	tests := []struct {
		name string
		in   string
		set  func([]byte) error
		want string
		err  error
	}{
		{"15-bit picture id", "90 e0 81 23 17 20 50", func(b []byte) error { return SetVP8PictureID(b, 0x7ffe) },
			"90 e0 ff fe 17 20 50", nil},
		{"15-bit picture id wraps", "90 e0 81 23 17 20 50", func(b []byte) error { return SetVP8PictureID(b, 0x8001) },
			"90 e0 80 01 17 20 50", nil},
		{"7-bit picture id truncates", "90 80 2a 51", func(b []byte) error { return SetVP8PictureID(b, 200) },
			"90 80 48 51", nil},
		{"picture id absent", "90 40 17 51", func(b []byte) error { return SetVP8PictureID(b, 1) },
			"90 40 17 51", ErrFieldAbsent},
		{"no X", "10 50", func(b []byte) error { return SetVP8PictureID(b, 1) },
			"10 50", ErrFieldAbsent},
		{"TL0PICIDX", "90 e0 81 23 17 20 50", func(b []byte) error { return SetVP8TL0PICIDX(b, 0xfe) },
			"90 e0 81 23 fe 20 50", nil},
		{"TL0PICIDX after 7-bit id", "90 c0 05 17 50", func(b []byte) error { return SetVP8TL0PICIDX(b, 0) },
			"90 c0 05 00 50", nil},
		{"TL0PICIDX absent", "90 80 05 50", func(b []byte) error { return SetVP8TL0PICIDX(b, 0) },
			"90 80 05 50", ErrFieldAbsent},
		{"KEYIDX keeps TID and Y", "90 f0 81 23 17 a5 50", func(b []byte) error { return SetVP8KEYIDX(b, 0xff) },
			"90 f0 81 23 17 bf 50", nil},
		{"KEYIDX absent with T", "90 20 a5 50", func(b []byte) error { return SetVP8KEYIDX(b, 1) },
			"90 20 a5 50", ErrFieldAbsent},
		{"short payload", "80 80 81", func(b []byte) error { return SetVP8PictureID(b, 1) },
			"80 80 81", ErrShortPacket},
		{"short TL0PICIDX", "80 40", func(b []byte) error { return SetVP8TL0PICIDX(b, 1) },
			"80 40", ErrShortPacket},
		{"short KEYIDX", "80 10", func(b []byte) error { return SetVP8KEYIDX(b, 1) },
			"80 10", ErrShortPacket},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := hx(t, tt.in)
			if err := tt.set(b); !errors.Is(err, tt.err) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if want := hx(t, tt.want); !bytes.Equal(b, want) {
				t.Fatalf("got % x, want % x", b, want)
			}
		})
	}
}

func TestVP8Allocs(t *testing.T) {
	b := hx(t, vp8Seeds[1])
	var d VP8Descriptor
	a := testing.AllocsPerRun(100, func() {
		_ = ParseVP8(b, &d)
		_ = SetVP8PictureID(b, 77)
		_ = SetVP8TL0PICIDX(b, 3)
		_ = SetVP8KEYIDX(b, 3)
	})
	if a != 0 {
		t.Fatalf("VP8 parse/rewrite allocates %v", a)
	}
}

func BenchmarkParseVP8(b *testing.B) {
	p := hx(b, vp8Seeds[1])
	var d VP8Descriptor
	b.ReportAllocs()
	for b.Loop() {
		if err := ParseVP8(p, &d); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRewriteVP8(b *testing.B) {
	p := hx(b, vp8Seeds[1])
	b.ReportAllocs()
	var i uint16
	for b.Loop() {
		i++
		if SetVP8PictureID(p, i) != nil || SetVP8TL0PICIDX(p, uint8(i)) != nil {
			b.Fatal("rewrite failed")
		}
	}
}
