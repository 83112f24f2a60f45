package bench

import (
	"fmt"
	"sort"
	"strings"

	"github.com/podium-sfu/podium/internal/load"
)

// A benchmark measures its scenario only if the scenario held: every receiver
// got every source it shows in the encoding the scenario names, and the SFU
// forwarded about the nominal packets and bits. This file is the check, pure:
// the caller samples what the receivers get (load.Run.Receptions) during the
// measured window and hands in the SFU's forwarded rates.

// Thresholds of the check.
const (
	// MinHeldFraction is the least share of the window's samples in which a
	// receiver must get a source in the expected encoding.
	MinHeldFraction = 0.90
	// RateTolerance is how far forwarded packets/s and Mbit/s may lie from nominal.
	RateTolerance = 0.15
)

// Tally counts, over a window, in how many samples each receiver got each
// source in which encoding.
type Tally struct {
	Samples int
	got     map[tallyKey]map[int]int // observed height (0: audio or no keyframe yet) → samples
}

type tallyKey struct{ recv, src, kind string }

// notReceived marks a sample in which the stream did not arrive at all.
const notReceived = -1

// Add counts one sample: everything the receivers get at one moment.
func (t *Tally) Add(recs []load.Reception) {
	if t.got == nil {
		t.got = map[tallyKey]map[int]int{}
	}
	t.Samples++
	for _, r := range recs {
		k := tallyKey{r.Receiver, r.Source, r.Kind}
		m := t.got[k]
		if m == nil {
			m = map[int]int{}
			t.got[k] = m
		}
		m[r.Height]++
	}
}

// Verdict is the outcome of Verify: Problems is empty when the scenario held.
type Verdict struct {
	Streams  int     // expected streams
	Held     int     // streams held for at least MinHeldFraction of the window
	WorstPct float64 // the lowest share (percent) of the window any expected stream held
	Problems []string
}

// OK reports whether the scenario held.
func (v Verdict) OK() bool { return len(v.Problems) == 0 }

// Error describes the problems, at most limit receivers' worth plus a count.
func (v Verdict) Error() string {
	const limit = 12
	var b strings.Builder
	fmt.Fprintf(&b, "the scenario did not hold (%d of %d streams as expected):", v.Held, v.Streams)
	for i, p := range v.Problems {
		if i == limit {
			fmt.Fprintf(&b, "\n  … and %d more", len(v.Problems)-limit)
			break
		}
		b.WriteString("\n  " + p)
	}
	return b.String()
}

// Rates are forwarded packets and bits per second.
type Rates struct {
	PacketsPerS, BitsPerS float64
}

// Verify checks a window's tally against the scenario's expectations and the
// SFU's forwarded rates against nominal.
func Verify(expected []load.Expectation, t *Tally, nominal, forwarded Rates) Verdict {
	v := Verdict{Streams: len(expected), WorstPct: 100}
	if t.Samples == 0 {
		v.WorstPct = 0
		v.Problems = append(v.Problems, "no sample of what the receivers get was taken")
	}
	for _, e := range expected {
		got := t.got[tallyKey{e.Receiver, e.Source, e.Kind}]
		want := 0 // audio: any stream
		if e.Kind == "video" {
			want = e.Height
		}
		held := 0
		if t.Samples > 0 {
			held = got[want]
		}
		frac := 0.0
		if t.Samples > 0 {
			frac = float64(held) / float64(t.Samples)
		}
		v.WorstPct = min(v.WorstPct, 100*frac)
		if t.Samples > 0 && frac >= MinHeldFraction {
			v.Held++
			continue
		}
		if t.Samples == 0 {
			continue
		}
		v.Problems = append(v.Problems, fmt.Sprintf("%s got %s's %s %s (want %s ≥ %.0f %% of the window)",
			e.Receiver, e.Source, e.Kind, describe(e.Kind, got, t.Samples), encoding(e.Kind, want), 100*MinHeldFraction))
	}
	check := func(got, want float64, unit string, scale float64) {
		if want <= 0 {
			return
		}
		if dev := got/want - 1; dev > RateTolerance || dev < -RateTolerance {
			v.Problems = append(v.Problems, fmt.Sprintf("the SFU forwarded %.1f %s, nominal %.1f (%+.0f %%, allowed ±%.0f %%)",
				got/scale, unit, want/scale, 100*dev, 100*RateTolerance))
		}
	}
	check(forwarded.PacketsPerS, nominal.PacketsPerS, "packets/s", 1)
	check(forwarded.BitsPerS, nominal.BitsPerS, "Mbit/s", 1e6)
	return v
}

func encoding(kind string, height int) string {
	switch {
	case height == notReceived:
		return "nothing"
	case kind == "audio":
		return "audio"
	case height == 0:
		return "video before its first keyframe"
	}
	return fmt.Sprintf("%dp", height)
}

// describe says what a stream was, as shares of the samples: "at 360p 80 %,
// at 180p 15 %, nothing 5 %".
func describe(kind string, got map[int]int, samples int) string {
	counts := map[int]int{}
	seen := 0
	for h, n := range got {
		counts[h] += n
		seen += n
	}
	if missing := samples - seen; missing > 0 {
		counts[notReceived] += missing
	}
	heights := make([]int, 0, len(counts))
	for h := range counts {
		heights = append(heights, h)
	}
	sort.Slice(heights, func(i, j int) bool {
		if counts[heights[i]] != counts[heights[j]] {
			return counts[heights[i]] > counts[heights[j]]
		}
		return heights[i] > heights[j]
	})
	parts := make([]string, 0, len(heights))
	for _, h := range heights {
		name := encoding(kind, h)
		if kind == "video" && h > 0 {
			name = "at " + name
		}
		parts = append(parts, fmt.Sprintf("%s %.0f %%", name, 100*float64(counts[h])/float64(samples)))
	}
	return strings.Join(parts, ", ")
}
