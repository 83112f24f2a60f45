package alloc

import "github.com/podium-sfu/podium/internal/algo/layers"

// nominal rates by encoding index and temporal share, used while a source's
// rates are unknown: the 180p/360p/720p simulcast of a 720p capture (system
// spec §5, with the web client's 1.5 Mb/s top: web/src/protocol/encodings.ts)
// and libwebrtc's VP8 three-layer split.
var (
	nominalRate   = [3]int{150_000, 500_000, 1_500_000}
	nominalShares = [MaxTemporal + 1]float64{0.4, 0.6, 1}
)

// buildLadder lists the steps a source can be given, cheapest first: each
// temporal layer of its lowest active encoding, then each higher active
// encoding up to the one layers.Choose picks for what the receiver shows, at
// its full frame rate. Lower frame rates are for keeping some video on a
// starved link, not for trading against resolution.
func buildLadder(dst []step, src *Source) []step {
	want := src.WantedEncoding()
	if want < 0 {
		return dst
	}
	first := true
	for e := 0; e <= want && e < len(src.Layers); e++ {
		l := &src.Layers[e]
		if !l.Active {
			continue
		}
		rates := effectiveRates(l, e)
		if first {
			for t, r := range rates {
				if r > 0 {
					dst = append(dst, step{enc: e, tl: t, rate: r})
				}
			}
			first = false
			continue
		}
		for t := MaxTemporal; t >= 0; t-- {
			if rates[t] > 0 {
				dst = append(dst, step{enc: e, tl: t, rate: rates[t]})
				break
			}
		}
	}
	return dst
}

func effectiveRates(l *Layer, e int) [MaxTemporal + 1]int {
	if l.Bitrate != [MaxTemporal + 1]int{} {
		return l.Bitrate
	}
	var r [MaxTemporal + 1]int
	base := nominalRate[min(e, len(nominalRate)-1)]
	for t := range r {
		r[t] = int(float64(base) * nominalShares[t])
	}
	return r
}

// WantedEncoding is the encoding what the receiver shows of s calls for,
// bandwidth aside: layers.Choose over its active encodings, without a budget.
func (s *Source) WantedEncoding() int {
	var buf [4]layers.Encoding // on the stack (Choose keeps nothing); more encodings would spill to the heap
	return layers.Choose(encodings(buf[:0], s.Layers), s.Want, 0).Encoding
}

// encodings appends ls to dst as layers.Choose takes them.
func encodings(dst []layers.Encoding, ls []Layer) []layers.Encoding {
	for _, l := range ls {
		dst = append(dst, layers.Encoding{Width: l.Width, Height: l.Height, Active: l.Active, Bitrate: l.Bitrate[MaxTemporal]})
	}
	return dst
}
