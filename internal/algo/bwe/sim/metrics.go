package sim

import "time"

// FirstAfter returns the first sample time at or after from when ok holds.
func (r *Result) FirstAfter(from time.Duration, ok func(Sample) bool) (time.Duration, bool) {
	for _, s := range r.Samples {
		if s.T >= from && ok(s) {
			return s.T, true
		}
	}
	return 0, false
}

// SwitchesBetween counts allocation changes of any source in [from, to).
func (r *Result) SwitchesBetween(from, to time.Duration) int {
	n := 0
	for _, s := range r.Switches {
		if s.T >= from && s.T < to {
			n++
		}
	}
	return n
}

// MinFPS is the lowest frame rate source src delivered over any two whole
// seconds in [from, to) (frames completed per second; a frame completing just
// after a second boundary moves one frame between neighbouring seconds, which
// a receiver's jitter buffer smooths out).
func (r *Result) MinFPS(src int, from, to time.Duration) float64 {
	lo := -1.0
	f := r.Frames[src]
	for sec := int(from / time.Second); sec+1 < int(to/time.Second) && sec+1 < len(f); sec++ {
		if v := float64(f[sec]+f[sec+1]) / 2; lo < 0 || v < lo {
			lo = v
		}
	}
	return lo
}

// Fraction is the share of samples in [from, to) for which ok holds.
func (r *Result) Fraction(from, to time.Duration, ok func(Sample) bool) float64 {
	n, k := 0, 0
	for _, s := range r.Samples {
		if s.T >= from && s.T < to {
			n++
			if ok(s) {
				k++
			}
		}
	}
	if n == 0 {
		return 0
	}
	return float64(k) / float64(n)
}

// Mean is the average of f over the samples in [from, to).
func (r *Result) Mean(from, to time.Duration, f func(Sample) float64) float64 {
	n, sum := 0, 0.0
	for _, s := range r.Samples {
		if s.T >= from && s.T < to {
			n++
			sum += f(s)
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// Level is a pick's rank: 0 off, 1–3 the lowest encoding's temporal layers,
// then one per higher encoding.
func Level(p Pick) int { return level(p) }

// LevelAt is the level of source src at the sample nearest to t.
func (r *Result) LevelAt(src int, t time.Duration) int {
	for _, s := range r.Samples {
		if s.T >= t {
			return level(s.Picks[src])
		}
	}
	return level(r.Samples[len(r.Samples)-1].Picks[src])
}

// Downgrade returns how long after from source src was first given a lower
// level than it had at from.
func (r *Result) Downgrade(src int, from time.Duration) (time.Duration, bool) {
	start := r.LevelAt(src, from)
	t, ok := r.FirstAfter(from, func(s Sample) bool { return level(s.Picks[src]) < start })
	return t - from, ok
}

// Reaches returns how long after from source src first had at least level l.
func (r *Result) Reaches(src int, from time.Duration, l int) (time.Duration, bool) {
	t, ok := r.FirstAfter(from, func(s Sample) bool { return level(s.Picks[src]) >= l })
	return t - from, ok
}

// EstimateBelow returns how long after from the estimate first fell below v.
func (r *Result) EstimateBelow(from time.Duration, v int) (time.Duration, bool) {
	t, ok := r.FirstAfter(from, func(s Sample) bool { return s.Estimate < v })
	return t - from, ok
}

// EstimateAbove returns how long after from the estimate first reached v.
func (r *Result) EstimateAbove(from time.Duration, v int) (time.Duration, bool) {
	t, ok := r.FirstAfter(from, func(s Sample) bool { return s.Estimate >= v })
	return t - from, ok
}

// TopLevel is the level of the 720p encoding.
const TopLevel = 5
