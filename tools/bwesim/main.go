// Command bwesim runs the bandwidth estimation and allocation scenarios of
// internal/algo/bwe/sim, prints their figures as a Markdown table and writes
// one SVG plot per scenario; then the same for the scenarios with competing
// CUBIC flows, in competitive mode and in delay mode alone (plots
// <name>-delayonly.svg).
//
//	go run ./tools/bwesim -out docs/bwe
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/podium-sfu/podium/internal/algo/bwe"
	"github.com/podium-sfu/podium/internal/algo/bwe/sim"
)

const s = time.Second

func main() {
	out := flag.String("out", "", "directory for the SVG plots (none if empty)")
	seeds := flag.Int("seeds", 8, "seeds per scenario for the worst-case column")
	flag.Parse()

	fmt.Println("| scenario | figure | seed 1 | worst of", *seeds, "seeds |")
	fmt.Println("|---|---|---|---|")
	for _, sc := range sim.Standard() {
		first := sim.Run(sc)
		if *out != "" {
			if err := os.MkdirAll(*out, 0o755); err != nil {
				fail(err)
			}
			if err := os.WriteFile(filepath.Join(*out, sc.Name+".svg"), first.SVG(), 0o644); err != nil {
				fail(err)
			}
		}
		runs := []sim.Result{first}
		for seed := int64(2); seed <= int64(*seeds); seed++ {
			x := sc
			x.Seed = seed
			runs = append(runs, sim.Run(x))
		}
		for _, f := range figures(sc.Name) {
			worst := f.value(&runs[0])
			for i := range runs[1:] {
				worst = f.worse(worst, f.value(&runs[i+1]))
			}
			fmt.Printf("| %s | %s | %s | %s |\n", sc.Name, f.name, f.format(f.value(&runs[0])), f.format(worst))
		}
	}
	competition(*out, *seeds)
}

// competition prints, for each scenario with competing flows, each phase's
// mean media and TCP rates and the p95 queue, averaged over the seeds, in
// competitive mode and in delay mode alone, and the time back on the top
// layer after the last flow stops (worst seed).
func competition(out string, seeds int) {
	fmt.Println()
	fmt.Println("| scenario | mode | phase | media delivered | TCP goodput | p95 queue | top layer | back on top after the flows (worst) |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	for _, base := range []sim.Scenario{sim.TCPOne(), sim.TCPTen(), sim.TCPStaggered(), sim.TCPOnOff(), sim.Alone4M()} {
		for _, delayOnly := range []bool{false, true} {
			sc, mode := base, "competitive"
			if delayOnly {
				c := bwe.DefaultConfig()
				c.DelayOnly = true
				sc.BWE, mode = &c, "delay only"
			}
			var runs []sim.Result
			for seed := int64(1); seed <= int64(seeds); seed++ {
				x := sc
				x.Seed = base.Seed + seed - 1
				runs = append(runs, sim.Run(x))
			}
			if out != "" {
				name := sc.Name
				if delayOnly {
					name += "-delayonly"
				}
				if err := os.WriteFile(filepath.Join(out, name+".svg"), runs[0].SVG(), 0o644); err != nil {
					fail(err)
				}
			}
			last := time.Duration(0)
			for _, f := range sc.TCP {
				last = max(last, f.Stop)
			}
			back := "—"
			if last > 0 {
				worst := 0.0
				for i := range runs {
					d, ok := runs[i].Reaches(0, last, sim.TopLevel)
					worst = (figure{higher: true}).worse(worst, secs(d, ok))
				}
				back = (figure{unit: "s"}).format(worst)
			}
			for _, ph := range phases(sc) {
				var media, tcp, q, onTop float64
				for i := range runs {
					r := &runs[i]
					media += r.Mean(ph.from, ph.to, func(x sim.Sample) float64 { return float64(x.Media) })
					tcp += r.Mean(ph.from, ph.to, func(x sim.Sample) float64 { return float64(x.TCP) })
					q += p95(r, ph.from, ph.to).Seconds() * 1000
					onTop += pct(r, ph.from, ph.to, top)
				}
				n := float64(len(runs))
				fmt.Printf("| %s | %s | %s | %.0f kb/s | %.0f kb/s | %.0f ms | %.0f %% | %s |\n",
					sc.Name, mode, ph.name, media/n/1000, tcp/n/1000, q/n, onTop/n, back)
			}
		}
	}
}

type phase struct {
	name     string
	from, to time.Duration
}

// phases: before the first flow, with flows (from 10 s after the first starts
// to the last stop), after.
func phases(sc sim.Scenario) []phase {
	if len(sc.TCP) == 0 {
		return []phase{{"alone, 10 s on", 10 * s, sc.Duration}}
	}
	first, last := sc.Duration, time.Duration(0)
	for _, f := range sc.TCP {
		first, last = min(first, f.Start), max(last, f.Stop)
	}
	return []phase{{"before", 5 * s, first}, {"with TCP", first + 10*s, last}, {"after, 10 s on", last + 10*s, sc.Duration}}
}

func p95(r *sim.Result, from, to time.Duration) time.Duration {
	var qs []time.Duration
	for _, x := range r.Samples {
		if x.T >= from && x.T < to {
			qs = append(qs, x.Queue)
		}
	}
	if len(qs) == 0 {
		return 0
	}
	slices.Sort(qs)
	return qs[len(qs)*95/100]
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, err)
	os.Exit(1)
}

// figure is one measured number; value returns -1 for "never".
type figure struct {
	name   string
	value  func(r *sim.Result) float64
	higher bool // higher is worse
	unit   string
}

func (f figure) worse(a, b float64) float64 {
	if a < 0 || b < 0 {
		if f.higher {
			return -1
		}
		return max(a, b)
	}
	if f.higher == (b > a) {
		return b
	}
	return a
}

func (f figure) format(v float64) string {
	if v < 0 {
		return "never"
	}
	switch f.unit {
	case "s":
		return fmt.Sprintf("%.1f s", v)
	case "%":
		return fmt.Sprintf("%.0f %%", v)
	case "b/s":
		return fmt.Sprintf("%.0f kb/s", v/1000)
	case "fps":
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

func secs(d time.Duration, ok bool) float64 {
	if !ok {
		return -1
	}
	return d.Seconds()
}

func pct(r *sim.Result, from, to time.Duration, ok func(sim.Sample) bool) float64 {
	return 100 * r.Fraction(from, to, ok)
}

func top(x sim.Sample) bool { return sim.Level(x.Picks[0]) == sim.TopLevel }

func minEstimate(r *sim.Result, from time.Duration) float64 {
	m := -1
	for _, x := range r.Samples {
		if x.T >= from && (m < 0 || x.Estimate < m) {
			m = x.Estimate
		}
	}
	return float64(m)
}

func figures(name string) []figure {
	recovery := []figure{
		{"cap → estimate < 500 kb/s", func(r *sim.Result) float64 { return secs(r.EstimateBelow(20*s, 500_000)) }, true, "s"},
		{"cap → lower layer", func(r *sim.Result) float64 { return secs(r.Downgrade(0, 20*s)) }, true, "s"},
		{"lifted → estimate > 2.5 Mb/s", func(r *sim.Result) float64 { return secs(r.EstimateAbove(40*s, sim.Rates720[2])) }, true, "s"},
		{"lifted → top layer", func(r *sim.Result) float64 { return secs(r.Reaches(0, 40*s, sim.TopLevel)) }, true, "s"},
		{"switches in 60 s", func(r *sim.Result) float64 { return float64(len(r.Switches)) }, true, ""},
	}
	stable := func(from time.Duration) []figure {
		return []figure{
			{fmt.Sprintf("top layer after %v", from), func(r *sim.Result) float64 { return pct(r, from, r.Scenario.Duration, top) }, false, "%"},
			{fmt.Sprintf("lowest estimate after %v", from), func(r *sim.Result) float64 { return minEstimate(r, from) }, false, "b/s"},
			{fmt.Sprintf("switches after %v", from), func(r *sim.Result) float64 {
				return float64(r.SwitchesBetween(from, r.Scenario.Duration+s))
			}, true, ""},
		}
	}
	switch name {
	case "cap-drop", "remb-fallback":
		return recovery
	case "cap-128k":
		return []figure{
			{"min frames/s (2 s windows) after 15 s", func(r *sim.Result) float64 { return r.MinFPS(0, 15*s, r.Scenario.Duration) }, false, "fps"},
			{"suspended after 15 s", func(r *sim.Result) float64 {
				return pct(r, 15*s, r.Scenario.Duration, func(x sim.Sample) bool { return x.Picks[0].Suspended })
			}, true, "%"},
			{"on 180p after 15 s", func(r *sim.Result) float64 {
				return pct(r, 15*s, r.Scenario.Duration, func(x sim.Sample) bool { return x.Picks[0].Encoding == 0 })
			}, false, "%"},
			{"switches per minute after 15 s", func(r *sim.Result) float64 {
				return float64(r.SwitchesBetween(15*s, r.Scenario.Duration+s)) * 60 / (r.Scenario.Duration - 15*s).Seconds()
			}, true, ""},
		}
	case "steady-threshold":
		return []figure{
			{"switches in [60 s, 120 s)", func(r *sim.Result) float64 { return float64(r.SwitchesBetween(60*s, 120*s)) }, true, ""},
			{"top layer in [60 s, 120 s)", func(r *sim.Result) float64 { return pct(r, 60*s, 120*s, top) }, false, "%"},
			{"first on top layer", func(r *sim.Result) float64 { return secs(r.Reaches(0, 0, sim.TopLevel)) }, true, "s"},
		}
	case "loss-5pct", "bursty-loss", "jitter":
		return stable(10 * s)
	case "probe-no-room":
		return []figure{
			{"mean estimate after 10 s (path 1 Mb/s)", func(r *sim.Result) float64 {
				return r.Mean(10*s, r.Scenario.Duration, func(x sim.Sample) float64 { return float64(x.Estimate) })
			}, true, "b/s"},
			{"probes in 60 s", func(r *sim.Result) float64 { return float64(r.Final.Probes) }, true, ""},
			{"switches after 10 s", func(r *sim.Result) float64 { return float64(r.SwitchesBetween(10*s, 61*s)) }, true, ""},
		}
	case "gallery":
		return []figure{
			{"cap → stage lower layer", func(r *sim.Result) float64 { return secs(r.Downgrade(0, 20*s)) }, true, "s"},
			{"lifted → stage top layer", func(r *sim.Result) float64 { return secs(r.Reaches(0, 40*s, sim.TopLevel)) }, true, "s"},
			{"thumbnails suspended", func(r *sim.Result) float64 {
				return pct(r, 0, r.Scenario.Duration, func(x sim.Sample) bool {
					return x.Picks[1].Suspended || x.Picks[2].Suspended || x.Picks[3].Suspended
				})
			}, true, "%"},
			{"switches in 60 s (4 sources)", func(r *sim.Result) float64 { return float64(len(r.Switches)) }, true, ""},
		}
	}
	return nil
}
