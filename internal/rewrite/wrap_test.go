package rewrite

import (
	"slices"
	"testing"

	"github.com/podium-sfu/podium/internal/media"
)

// Every counter wraps, within an encoding and across a switch. Scenario:
// encoding a sends a key frame (t=0) and a TL0 frame (t=33 ms), two packets
// each; with b set, the target moves to b, which sends a key frame
// (t=50 ms) and a TL0 frame (t=83 ms). want is the field over the forwarded
// packets, read from the Output (out) or from the rewritten packet (wire).
func TestWraparound(t *testing.T) {
	seq := func(o Output, _ media.VP8Descriptor) uint32 { return uint32(o.SequenceNumber) }
	ts := func(o Output, _ media.VP8Descriptor) uint32 { return o.Timestamp }
	pid := func(o Output, _ media.VP8Descriptor) uint32 { return uint32(o.PictureID) }
	wirePID := func(_ Output, d media.VP8Descriptor) uint32 { return uint32(d.PictureID) }
	tl0 := func(_ Output, d media.VP8Descriptor) uint32 { return uint32(d.TL0PICIDX) }
	keyidx := func(_ Output, d media.VP8Descriptor) uint32 { return uint32(d.KEYIDX) }
	with := func(s *src, f func(*src)) *src { f(s); return s }
	src15 := func(enc int) *src { return newSrc(enc, 1000, 1000, 1000, 100) }

	tests := []struct {
		name  string
		a, b  *src
		field func(Output, media.VP8Descriptor) uint32
		want  []uint32
	}{
		{"seq 65535→0", with(src15(0), func(s *src) { s.seq = 65534 }), nil, seq,
			[]uint32{65534, 65535, 0, 1}},
		{"seq 65535→0 at a switch", with(src15(0), func(s *src) { s.seq = 65532 }), src15(1), seq,
			[]uint32{65532, 65533, 65534, 65535, 0, 1, 2, 3}},
		{"timestamp 2^32", with(src15(0), func(s *src) { s.ts = 1<<32 - 1001 }), nil, ts,
			[]uint32{1<<32 - 1001, 1<<32 - 1001, 1999, 1999}},
		// 17 ms after the last packet: 1530 ticks.
		{"timestamp 2^32 at a switch", with(src15(0), func(s *src) { s.ts = 1<<32 - 4001 }), src15(1), ts,
			[]uint32{1<<32 - 4001, 1<<32 - 4001, 1<<32 - 1001, 1<<32 - 1001, 529, 529, 3529, 3529}},
		{"picture id 32767→0", with(src15(0), func(s *src) { s.pid = 32766 }), nil, wirePID,
			[]uint32{32767, 32767, 0, 0}},
		{"picture id 32767→0 at a switch", with(src15(0), func(s *src) { s.pid = 32765 }), src15(1), wirePID,
			[]uint32{32766, 32766, 32767, 32767, 0, 0, 1, 1}},
		{"7-bit picture id 127→0 on the wire", with(src15(0), func(s *src) { s.bits, s.pid = 7, 126 }), nil, wirePID,
			[]uint32{127, 127, 0, 0}},
		{"7-bit picture id counts on in the output", with(src15(0), func(s *src) { s.bits, s.pid = 7, 126 }), nil, pid,
			[]uint32{127, 127, 128, 128}},
		{"7-bit to 15-bit picture id", with(src15(0), func(s *src) { s.bits, s.pid = 7, 125 }), src15(1), wirePID,
			[]uint32{126, 126, 127, 127, 128, 128, 129, 129}},
		{"15-bit to 7-bit picture id", with(src15(0), func(s *src) { s.pid = 200 }), with(src15(1), func(s *src) { s.bits, s.pid = 7, 3 }), wirePID,
			[]uint32{201, 201, 202, 202, 203 & 0x7f, 203 & 0x7f, 204 & 0x7f, 204 & 0x7f}},
		{"TL0PICIDX 255→0", with(src15(0), func(s *src) { s.tl0 = 254 }), nil, tl0,
			[]uint32{255, 255, 0, 0}},
		{"TL0PICIDX 255→0 at a switch", with(src15(0), func(s *src) { s.tl0 = 253 }), src15(1), tl0,
			[]uint32{254, 254, 255, 255, 0, 0, 1, 1}},
		{"KEYIDX 31→0 at a switch", with(src15(0), func(s *src) { s.keyidx = 30 }), src15(1), keyidx,
			[]uint32{31, 31, 31, 31, 0, 0, 0, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pr := NewProjector()
			pr.SetTarget(tt.a.enc, 2)
			type sent struct {
				p   *parsed
				out Output
			}
			var got []sent
			send := func(at float64, s *src, ps []*parsed) {
				for _, p := range ps {
					if o, ok := feed(pr, ms(at), s.enc, p); ok {
						got = append(got, sent{p, o})
					}
				}
			}
			send(0, tt.a, tt.a.key(t))
			send(33, tt.a, tt.a.delta(t))
			if tt.b != nil {
				pr.SetTarget(tt.b.enc, 2)
				send(50, tt.b, tt.b.key(t))
				send(83, tt.b, tt.b.delta(t))
			}
			var vals []uint32
			for _, g := range got {
				b := slices.Clone(g.p.buf)
				if err := Apply(b, &g.p.hdr, g.out); err != nil {
					t.Fatal(err)
				}
				vals = append(vals, tt.field(g.out, parse(t, b).vp8))
			}
			if !slices.Equal(vals, tt.want) {
				t.Errorf("got  %v\nwant %v", vals, tt.want)
			}
		})
	}
}
