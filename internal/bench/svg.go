package bench

import (
	"fmt"
	"math"
	"strings"
)

// Series is one line of a chart; Err, when set, draws ± error bars.
type Series struct {
	Name string
	X, Y []float64
	Err  []float64
}

// Chart is a line chart with markers, drawn as SVG with no dependencies.
type Chart struct {
	Title          string
	XLabel, YLabel string
	XTicks         []float64 // where to put x ticks (nil: from the data)
	XTickLabels    []string  // optional labels for XTicks
	Series         []Series
}

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"}

const (
	chartW, chartH         = 640, 420
	marginL, marginR       = 70, 20
	marginTop, marginBelow = 40, 55
)

// SVG renders the chart.
func (c Chart) SVG() []byte {
	xmin, xmax := math.Inf(1), math.Inf(-1)
	ymax := 0.0
	for _, s := range c.Series {
		for i := range s.X {
			xmin, xmax = math.Min(xmin, s.X[i]), math.Max(xmax, s.X[i])
			top := s.Y[i]
			if i < len(s.Err) {
				top += s.Err[i]
			}
			ymax = math.Max(ymax, top)
		}
	}
	for _, x := range c.XTicks {
		xmin, xmax = math.Min(xmin, x), math.Max(xmax, x)
	}
	if math.IsInf(xmin, 1) {
		xmin, xmax = 0, 1
	}
	if xmax == xmin {
		xmax = xmin + 1
	}
	ystep := niceStep(ymax / 5)
	ytop := math.Max(ystep, math.Ceil(ymax/ystep)*ystep)
	pw, ph := float64(chartW-marginL-marginR), float64(chartH-marginTop-marginBelow)
	pad := (xmax - xmin) * 0.04
	px := func(x float64) float64 { return marginL + (x-xmin+pad)/(xmax-xmin+2*pad)*pw }
	py := func(y float64) float64 { return marginTop + ph - y/ytop*ph }

	var b strings.Builder
	chartHead(&b, chartH, c.Title, ytop, ystep, py)
	// X ticks.
	ticks := c.XTicks
	if ticks == nil {
		seen := map[float64]bool{}
		for _, s := range c.Series {
			for _, x := range s.X {
				if !seen[x] {
					seen[x] = true
					ticks = append(ticks, x)
				}
			}
		}
	}
	for i, x := range ticks {
		label := num(x)
		if i < len(c.XTickLabels) {
			label = c.XTickLabels[i]
		}
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#333"/>`+"\n", px(x), py(0), px(x), py(0)+5)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", px(x), py(0)+18, esc(label))
	}
	fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#333"/>`+"\n", marginL, py(0), chartW-marginR, py(0))
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%.1f" stroke="#333"/>`+"\n", marginL, marginTop, marginL, py(0))
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", marginL+pw/2, chartH-12, esc(c.XLabel))
	fmt.Fprintf(&b, `<text x="16" y="%.1f" text-anchor="middle" transform="rotate(-90 16 %.1f)">%s</text>`+"\n", marginTop+ph/2, marginTop+ph/2, esc(c.YLabel))
	// Series.
	for si, s := range c.Series {
		color := palette[si%len(palette)]
		var pts []string
		for i := range s.X {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(s.X[i]), py(s.Y[i])))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", color, strings.Join(pts, " "))
		for i := range s.X {
			x, y := px(s.X[i]), py(s.Y[i])
			if i < len(s.Err) && s.Err[i] > 0 {
				lo, hi := py(math.Max(0, s.Y[i]-s.Err[i])), py(s.Y[i]+s.Err[i])
				fmt.Fprintf(&b, `<path d="M%.1f %.1fV%.1fM%.1f %.1fh8M%.1f %.1fh8" stroke="%s"/>`+"\n", x, lo, hi, x-4, lo, x-4, hi, color)
			}
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"/>`+"\n", x, y, color)
		}
		ly := marginTop + 10 + 18*si
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"/><circle cx="%d" cy="%d" r="3.5" fill="%s"/>`+"\n",
			marginL+12, ly, marginL+36, ly, color, marginL+24, ly, color)
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", marginL+42, ly+4, esc(s.Name))
	}
	b.WriteString("</svg>\n")
	return []byte(b.String())
}

// niceStep rounds a raw step up to 1, 2 or 5 times a power of ten.
func niceStep(raw float64) float64 {
	if raw <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

func num(v float64) string {
	if v == math.Trunc(v) {
		return fmt.Sprintf("%.0f", v)
	}
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.2f", v), "0"), ".")
}

func esc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// BarChart is a grouped bar chart: one group per category, one bar per series
// in each, optionally with a mark per bar (e.g. a model's prediction).
type BarChart struct {
	Title          string
	Caption        string // small text under the axis label (e.g. the command that made it)
	XLabel, YLabel string
	Groups         []string
	Series         []BarSeries
	MarkName       string // legend of the marks; "" when there are none
}

// BarSeries is one bar in every group: Values[i] in Groups[i]; Marks, when
// set, draws a short black line across the bar at Marks[i].
type BarSeries struct {
	Name   string
	Values []float64
	Marks  []float64
}

// SVG renders the chart.
func (c BarChart) SVG() []byte {
	ymax := 0.0
	for _, s := range c.Series {
		for i, v := range s.Values {
			ymax = math.Max(ymax, v)
			if i < len(s.Marks) {
				ymax = math.Max(ymax, s.Marks[i])
			}
		}
	}
	ystep := niceStep(ymax / 5)
	ytop := math.Max(ystep, math.Ceil(ymax/ystep)*ystep)
	// Headroom for the legend above the tallest bar.
	ytop += ystep
	below := marginBelow
	if c.Caption != "" {
		below += 16
	}
	h := chartH + below - marginBelow
	pw, ph := float64(chartW-marginL-marginR), float64(h-marginTop-below)
	py := func(y float64) float64 { return marginTop + ph - y/ytop*ph }
	groupW := pw / float64(max(len(c.Groups), 1))
	barW := groupW * 0.8 / float64(max(len(c.Series), 1))

	var b strings.Builder
	chartHead(&b, h, c.Title, ytop, ystep, py)
	for gi, g := range c.Groups {
		x0 := marginL + groupW*float64(gi) + groupW*0.1
		for si, s := range c.Series {
			if gi >= len(s.Values) {
				continue
			}
			x, v := x0+barW*float64(si), s.Values[gi]
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s, %s: %s</title></rect>`+"\n",
				x+1, py(v), barW-2, py(0)-py(v), palette[si%len(palette)], esc(g), esc(s.Name), num(math.Round(v)))
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="10">%s</text>`+"\n", x+barW/2, py(v)-3, num(math.Round(v)))
			if gi < len(s.Marks) {
				fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black" stroke-width="2"/>`+"\n", x+1, py(s.Marks[gi]), x+barW-1, py(s.Marks[gi]))
			}
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", marginL+groupW*(float64(gi)+0.5), py(0)+18, esc(g))
	}
	fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#333"/>`+"\n", marginL, py(0), chartW-marginR, py(0))
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%.1f" stroke="#333"/>`+"\n", marginL, marginTop, marginL, py(0))
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", marginL+pw/2, py(0)+40, esc(c.XLabel))
	if c.Caption != "" {
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle" font-size="10" font-family="monospace">%s</text>`+"\n", marginL+pw/2, h-10, esc(c.Caption))
	}
	fmt.Fprintf(&b, `<text x="16" y="%.1f" text-anchor="middle" transform="rotate(-90 16 %.1f)">%s</text>`+"\n", marginTop+ph/2, marginTop+ph/2, esc(c.YLabel))
	lx := marginL + 12
	for si, s := range c.Series {
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="14" height="10" fill="%s"/><text x="%d" y="%d">%s</text>`+"\n",
			lx, marginTop+2, palette[si%len(palette)], lx+18, marginTop+11, esc(s.Name))
		lx += 30 + 7*len(s.Name)
	}
	if c.MarkName != "" {
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black" stroke-width="2"/><text x="%d" y="%d">%s</text>`+"\n",
			lx, marginTop+7, lx+14, marginTop+7, lx+18, marginTop+11, esc(c.MarkName))
	}
	b.WriteString("</svg>\n")
	return []byte(b.String())
}

// chartHead writes a chart's SVG opening, white background and title, then
// the horizontal grid with y-axis labels every ystep up to ytop (py maps a
// value to its y pixel).
func chartHead(b *strings.Builder, height int, title string, ytop, ystep float64, py func(float64) float64) {
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", chartW, height, chartW, height)
	fmt.Fprintf(b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(b, `<text x="%d" y="22" text-anchor="middle" font-size="14" font-weight="bold">%s</text>`+"\n", chartW/2, esc(title))
	for y := 0.0; y <= ytop+ystep/2; y += ystep {
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>`+"\n", marginL, py(y), chartW-marginR, py(y))
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", marginL-6, py(y)+4, num(y))
	}
}
