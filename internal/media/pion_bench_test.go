package media

import (
	"testing"

	"github.com/pion/rtp"
	"github.com/pion/rtp/codecs"
)

// The hand-written parsers against the pion code they stand in for, on the same
// Chrome-like packets (docs/performance.md records the figures). "pion" reuses
// its destination as a forwarding loop would; "pion-fresh" takes a new one per
// packet, as rtp.Packet.Unmarshal into a new Packet does.

func BenchmarkRTPHeaderVsPion(b *testing.B) {
	pkt := hx(b, pktVP8Key) // two one-byte extensions, CSRC-free: the common video packet
	b.Run("ours", func(b *testing.B) {
		var h RTPHeader
		b.ReportAllocs()
		for b.Loop() {
			if err := ParseRTPHeader(pkt, &h); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("pion", func(b *testing.B) {
		var h rtp.Header
		b.ReportAllocs()
		for b.Loop() {
			if _, err := h.Unmarshal(pkt); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("pion-fresh", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var h rtp.Header
			if _, err := h.Unmarshal(pkt); err != nil {
				b.Fatal(err)
			}
		}
	})
	// Malformed input from the network: the extension block runs past the end.
	short := pkt[:20]
	b.Run("ours-malformed", func(b *testing.B) {
		var h RTPHeader
		b.ReportAllocs()
		for b.Loop() {
			if ParseRTPHeader(short, &h) == nil {
				b.Fatal("accepted")
			}
		}
	})
	b.Run("pion-malformed", func(b *testing.B) {
		var h rtp.Header
		b.ReportAllocs()
		for b.Loop() {
			if _, err := h.Unmarshal(short); err == nil {
				b.Fatal("accepted")
			}
		}
	})
}

func BenchmarkVP8DescriptorVsPion(b *testing.B) {
	p := hx(b, vp8Seeds[1]) // Chrome: 15-bit picture id, TL0PICIDX, TID/Y
	b.Run("ours", func(b *testing.B) {
		var d VP8Descriptor
		b.ReportAllocs()
		for b.Loop() {
			if err := ParseVP8(p, &d); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("pion", func(b *testing.B) {
		var d codecs.VP8Packet
		b.ReportAllocs()
		for b.Loop() {
			if _, err := d.Unmarshal(p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("pion-fresh", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var d codecs.VP8Packet
			if _, err := d.Unmarshal(p); err != nil {
				b.Fatal(err)
			}
		}
	})
}
