package media

import "testing"

func TestVP8KeyframeSize(t *testing.T) {
	// Descriptor: X=1, S=1, PID=0; I=1 with a 15-bit picture id.
	desc := []byte{0x90, 0x80, 0x80, 0x01}
	key := append(append([]byte{}, desc...), 0x50, 0x42, 0x00, 0x9d, 0x01, 0x2a, 0x00, 0x05, 0xd0, 0x02) // 1280x720
	inter := append(append([]byte{}, desc...), 0x51, 0x42, 0x00, 0x9d, 0x01, 0x2a, 0x00, 0x05, 0xd0, 0x02)
	badStart := append(append([]byte{}, desc...), 0x50, 0x42, 0x00, 0x9d, 0x01, 0x2b, 0x00, 0x05, 0xd0, 0x02)
	scaled := append(append([]byte{}, desc...), 0x50, 0x42, 0x00, 0x9d, 0x01, 0x2a, 0x40, 0x41, 0xb4, 0x80) // scale bits set: 320x180
	cases := []struct {
		name string
		pkt  []byte
		w, h int
		ok   bool
	}{
		{"keyframe 720p", key, 1280, 720, true},
		{"interframe", inter, 0, 0, false},
		{"bad start code", badStart, 0, 0, false},
		{"scale bits ignored", scaled, 320, 180, true},
		{"truncated", key[:len(key)-1], 0, 0, false},
	}
	for _, c := range cases {
		var d VP8Descriptor
		if err := ParseVP8(c.pkt, &d); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		w, h, ok := VP8KeyframeSize(c.pkt, &d)
		if w != c.w || h != c.h || ok != c.ok {
			t.Errorf("%s: got %dx%d %v, want %dx%d %v", c.name, w, h, ok, c.w, c.h, c.ok)
		}
	}
}

func FuzzVP8KeyframeSize(f *testing.F) {
	f.Add([]byte{0x90, 0x80, 0x80, 0x01, 0x50, 0x42, 0x00, 0x9d, 0x01, 0x2a, 0x00, 0x05, 0xd0, 0x02})
	f.Fuzz(func(t *testing.T, b []byte) {
		var d VP8Descriptor
		if ParseVP8(b, &d) != nil {
			return
		}
		if w, h, ok := VP8KeyframeSize(b, &d); ok && (w <= 0 || h <= 0 || w > 16383 || h > 16383) {
			t.Fatalf("size %dx%d", w, h)
		}
	})
}
