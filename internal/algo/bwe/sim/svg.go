package sim

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// SVG draws the run: capacity, estimate and sent bitrate over time, and below
// the layer each source is given. It is deterministic, so the committed plots
// change only when the behaviour does.
func (r *Result) SVG() []byte {
	const (
		w, left, right  = 900, 60, 20
		top, rateH, gap = 30, 230, 30
		layerH          = 110
		h               = top + rateH + gap + layerH + 40
	)
	plotW := float64(w - left - right)
	dur := r.Scenario.Duration.Seconds()
	x := func(t time.Duration) float64 { return left + t.Seconds()/dur*plotW }

	maxRate := 0
	for _, s := range r.Samples {
		maxRate = max(maxRate, s.Capacity, s.Estimate, s.Sent)
	}
	// Log scale from 30 kb/s: 128 kb/s and 3 Mb/s are both readable.
	lo, hi := math.Log(30_000), math.Log(niceCeil(float64(maxRate)*1.05))
	yRate := func(v int) float64 {
		l := math.Log(math.Max(float64(v), 30_000))
		return top + rateH - (l-lo)/(hi-lo)*rateH
	}

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n", w, h, w, h)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", w, h)
	fmt.Fprintf(&b, `<text x="%d" y="16" font-size="13" font-weight="bold">%s</text>`+"\n", left, r.Scenario.Name)

	// Axes and grid of the rate panel.
	for _, v := range []float64{50e3, 100e3, 200e3, 500e3, 1e6, 2e6, 5e6, 10e6, 20e6} {
		if math.Log(v) > hi {
			break
		}
		y := yRate(int(v))
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>`+"\n", left, y, w-right, y)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", left-4, y+4, mbps(v))
	}
	step := 10.0
	if dur > 90 {
		step = 20
	}
	for s := 0.0; s <= dur+1e-9; s += step {
		xx := left + s/dur*plotW
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#eee"/>`+"\n", xx, top, xx, top+rateH+gap+layerH)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%gs</text>`+"\n", xx, top+rateH+gap+layerH+16, s)
	}

	line := func(color string, width float64, dash string, val func(Sample) int) {
		var pts [][2]int
		for _, s := range r.Samples {
			pts = append(pts, [2]int{int(math.Round(x(s.T))), int(math.Round(yRate(val(s))))})
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="%.1f" stroke-dasharray="%s" points="%s"/>`+"\n",
			color, width, dash, points(pts))
	}
	line("#f5a623", 1, "", func(s Sample) int { return s.Sent })
	line("#888", 2, "6,3", func(s Sample) int { return s.Capacity })
	line("#1f5fbf", 2, "", func(s Sample) int { return s.Estimate })

	legend := []struct{ color, name string }{{"#888", "capacity"}, {"#1f5fbf", "estimate"}, {"#f5a623", "sent (incl. probes)"}}
	if len(r.Scenario.TCP) > 0 {
		// Beside competing flows: what each side got through.
		line("#27ae60", 2, "", func(s Sample) int { return s.Media })
		line("#c0392b", 1.5, "", func(s Sample) int { return s.TCP })
		legend = append(legend, struct{ color, name string }{"#27ae60", "media delivered"}, struct{ color, name string }{"#c0392b", "TCP goodput"})
	}
	for i, l := range legend {
		lx := left + 200 + i*130
		if len(legend) > 3 {
			lx = left + 90 + i*128
		}
		fmt.Fprintf(&b, `<line x1="%d" y1="12" x2="%d" y2="12" stroke="%s" stroke-width="2"/><text x="%d" y="16">%s</text>`+"\n",
			lx, lx+20, l.color, lx+24, l.name)
	}

	// Layer panel: one step line per source, level = ladder position.
	ly0 := float64(top + rateH + gap)
	levels := []string{"off", "180p T0", "180p T1", "180p", "360p", "720p"}
	yLevel := func(l int) float64 { return ly0 + layerH - float64(l)/float64(len(levels)-1)*layerH }
	for i, name := range levels {
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/>`+"\n", left, yLevel(i), w-right, yLevel(i))
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", left-4, yLevel(i)+4, name)
	}
	colors := []string{"#c0392b", "#27ae60", "#8e44ad", "#16a085"}
	for src := range r.Scenario.Sources {
		var pts [][2]int
		for _, s := range r.Samples {
			if src >= len(s.Picks) {
				continue
			}
			y := yLevel(level(s.Picks[src])) + float64(src)*2
			pts = append(pts, [2]int{int(math.Round(x(s.T))), int(math.Round(y))})
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", colors[src%len(colors)], points(pts))
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="%s">%s</text>`+"\n", left+10+src*90, top+rateH+gap-6, colors[src%len(colors)], r.Scenario.Sources[src].ID)
	}
	b.WriteString("</svg>\n")
	return []byte(b.String())
}

// level places a pick on the layer panel's scale.
func level(p Pick) int {
	switch {
	case p.Suspended || p.Encoding < 0:
		return 0
	case p.Encoding == 0:
		return 1 + min(p.Temporal, 2)
	default:
		return 3 + min(p.Encoding, 2)
	}
}

func mbps(v float64) string {
	if v >= 1e6 {
		return fmt.Sprintf("%.1f Mb/s", v/1e6)
	}
	return fmt.Sprintf("%.0f kb/s", v/1e3)
}

func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// points formats a polyline, leaving out points that repeat the previous one
// or sit inside a horizontal or vertical run, which keeps the files small.
func points(pts [][2]int) string {
	var out []string
	for i, p := range pts {
		if i > 0 && p == pts[i-1] {
			continue
		}
		if i > 0 && i+1 < len(pts) {
			a, c := pts[i-1], pts[i+1]
			if (a[1] == p[1] && c[1] == p[1]) || (a[0] == p[0] && c[0] == p[0]) {
				continue
			}
		}
		out = append(out, fmt.Sprintf("%d,%d", p[0], p[1]))
	}
	return strings.Join(out, " ")
}
