package load

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// Speech patterns say who speaks when. They are pure: Advance(now) reports the
// changes due by now (time since the run started), so they run the same under a
// test's fake clock as in a load run.
type Speech interface {
	// Advance calls f for every speaking change due by now, in time order.
	Advance(now time.Duration, f func(speaker int, on bool))
}

// Speech pattern names.
const (
	SpeechPaper     = "paper"     // one random speaker at a time, a new one every 4 s (Last N paper)
	SpeechRealistic = "realistic" // turns, overlapping handovers, interjections
	SpeechNone      = "none"      // everyone silent
)

// NewSpeech makes the named pattern for n speakers.
func NewSpeech(name string, n int, seed uint64) (Speech, error) {
	rng := rand.New(rand.NewPCG(seed, 0x5eec4))
	switch {
	case n == 0 || name == SpeechNone:
		return &schedule{}, nil
	case name == SpeechPaper:
		return &schedule{gen: &paperTurns{n: n, rng: rng, every: 4 * time.Second}}, nil
	case name == SpeechRealistic:
		return &schedule{gen: newRealisticTurns(n, rng)}, nil
	}
	return nil, fmt.Errorf("unknown speech pattern %q (want %s, %s or %s)", name, SpeechPaper, SpeechRealistic, SpeechNone)
}

// speechEvent is one change.
type speechEvent struct {
	at      time.Duration
	speaker int
	on      bool
}

// turnGenerator produces events a turn at a time. Each call returns events in any
// order, and a horizon: no later call returns an event before it.
type turnGenerator interface {
	nextTurn() (events []speechEvent, horizon time.Duration)
}

// schedule buffers a generator's events and releases them in order.
type schedule struct {
	gen     turnGenerator
	pending []speechEvent // sorted by time
	horizon time.Duration
}

func (s *schedule) Advance(now time.Duration, f func(int, bool)) {
	if s.gen == nil {
		return
	}
	for s.horizon <= now {
		evs, h := s.gen.nextTurn()
		s.pending = append(s.pending, evs...)
		slices.SortStableFunc(s.pending, func(a, b speechEvent) int { return int(a.at - b.at) })
		s.horizon = h
	}
	i := 0
	for ; i < len(s.pending) && s.pending[i].at <= now; i++ {
		f(s.pending[i].speaker, s.pending[i].on)
	}
	s.pending = s.pending[i:]
}

// paperTurns: "At any point in time one endpoint sends levels associated with
// human speech, while the others send silence. The endpoint which sends speech
// levels changes every 4 seconds, with the new one being chosen randomly."
type paperTurns struct {
	n       int
	rng     *rand.Rand
	every   time.Duration
	t       time.Duration
	current int
	started bool
}

func (p *paperTurns) nextTurn() ([]speechEvent, time.Duration) {
	next := p.rng.IntN(p.n)
	if p.started && p.n > 1 {
		next = p.rng.IntN(p.n - 1)
		if next >= p.current {
			next++
		}
	}
	var evs []speechEvent
	if p.started {
		evs = append(evs, speechEvent{at: p.t, speaker: p.current, on: false})
	}
	evs = append(evs, speechEvent{at: p.t, speaker: next, on: true})
	p.current, p.started = next, true
	p.t += p.every
	return evs, p.t
}

// realisticTurns models a meeting: one speaker holds the floor for a turn (log-
// normal, median 8 s, 2–40 s); the next speaker is often the previous one (a
// dialogue) and starts up to 600 ms before the current one stops (overlap) or up to
// 800 ms after (a pause); meanwhile the others make short interjections ("yes",
// "right": 0.3–1.2 s, about one per 40 s each). Dominant speaker changes then come
// every 10-15 s, near what the thesis reports for meet.jit.si (22 s).
type realisticTurns struct {
	n        int
	rng      *rand.Rand
	t        time.Duration // when the current turn's speaker stops
	current  int
	previous int
	started  bool
}

const (
	turnMedian        = 8 * time.Second
	turnSigma         = 0.7
	turnMin, turnMax  = 2 * time.Second, 40 * time.Second
	maxOverlap        = 600 * time.Millisecond
	maxPause          = 800 * time.Millisecond
	interjectionEvery = 40 * time.Second // per listener, on average
	interjectionMin   = 300 * time.Millisecond
	interjectionMax   = 1200 * time.Millisecond
)

func newRealisticTurns(n int, rng *rand.Rand) *realisticTurns {
	return &realisticTurns{n: n, rng: rng, previous: -1}
}

func (r *realisticTurns) duration(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(r.rng.Float64()*float64(hi-lo))
}

func (r *realisticTurns) nextTurn() ([]speechEvent, time.Duration) {
	next, start := r.rng.IntN(r.n), time.Duration(0)
	if r.started {
		next = r.current
		if r.n > 1 {
			// Half the time the previous speaker answers back; else anyone else.
			if r.previous >= 0 && r.previous != r.current && r.rng.IntN(2) == 0 {
				next = r.previous
			} else {
				next = r.rng.IntN(r.n - 1)
				if next >= r.current {
					next++
				}
			}
		}
		// Half the handovers overlap; the same speaker resumes only after a pause.
		if next != r.current && r.rng.IntN(2) == 0 {
			start = r.t - r.duration(0, maxOverlap)
		} else {
			start = r.t + r.duration(time.Millisecond, maxPause)
		}
	}
	length := time.Duration(float64(turnMedian) * math.Exp(turnSigma*r.rng.NormFloat64()))
	length = min(max(length, turnMin), turnMax)
	end := start + length
	evs := []speechEvent{{at: start, speaker: next, on: true}, {at: end, speaker: next, on: false}}
	// Interjections by the others while this turn lasts, kept clear of the turn's
	// ends so they never merge with a handover.
	if r.n > 1 {
		for listener := 0; listener < r.n; listener++ {
			if listener == next {
				continue
			}
			for at := start + time.Second; ; {
				at += time.Duration(r.rng.ExpFloat64() * float64(interjectionEvery))
				d := r.duration(interjectionMin, interjectionMax)
				if at+d > end-time.Second {
					break
				}
				evs = append(evs, speechEvent{at: at, speaker: listener, on: true}, speechEvent{at: at + d, speaker: listener, on: false})
				at += d
			}
		}
	}
	r.previous, r.current, r.started = r.current, next, true
	r.t = end
	// The next turn starts at least maxOverlap before this one ends.
	return evs, end - maxOverlap
}
