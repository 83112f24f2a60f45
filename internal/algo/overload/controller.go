// Package overload decides how much video a node sheds when it is overloaded
// (thesis appendix B.1): above an overuse threshold it lowers one room's Last N
// or video layers a step at a time, below an underuse threshold it restores
// them, slowly, and once every room is down to audio only it refuses new
// joins. It is a pure state machine: samples come in with their time.
package overload

import (
	"math"
	"slices"
	"strings"
	"time"
)

// Config are the thresholds and timings.
type Config struct {
	// Overuse and Underuse are the smoothed CPU fractions (of the cores the
	// process may use) above which video is shed and below which it is restored.
	Overuse, Underuse float64
	// Smoothing is the time constant of the CPU average: one busy second is
	// not overload.
	Smoothing time.Duration
	// DownWait is the least time between two steps down: a step's effect must
	// show in the samples before the next. UpWait is the least time between a
	// step up and the step or overuse before it.
	DownWait, UpWait time.Duration
}

// DefaultConfig sheds above 85 % CPU and restores below 60 %.
func DefaultConfig() Config {
	return Config{Overuse: 0.85, Underuse: 0.6, Smoothing: 2 * time.Second,
		DownWait: 2 * time.Second, UpWait: 10 * time.Second}
}

// Sample is one measurement of the node.
type Sample struct {
	At  time.Time
	CPU float64 // CPU time used over the last interval / (interval × usable cores)
	// Span is how long CPU was measured over, up to At; 0 means since the
	// previous sample. The average starts from an idle node, so a first
	// sample over a short span weighs little; a first sample without a span
	// is taken whole.
	Span time.Duration
}

// Room is what the controller needs of a live room.
type Room struct {
	ID      string
	Size    int // participants
	LastN   int // the room's own Last N (-1: unlimited)
	Created time.Time
}

// Cap is a ceiling on what a room's receivers get: LastN -1 and MaxHeight 0
// mean no ceiling. Audio is never capped.
type Cap struct {
	LastN     int `json:"lastN"`     // at most this many videos per receiver
	MaxHeight int `json:"maxHeight"` // no video encoding above this many lines
}

// None is no ceiling.
var None = Cap{LastN: -1}

// ladder is a room's levels, each taking away more video than the one before;
// the last is audio only, the floor.
var ladder = [...]Cap{None, {LastN: -1, MaxHeight: 360}, {LastN: 6, MaxHeight: 360}, {LastN: 4, MaxHeight: 360},
	{LastN: 4, MaxHeight: 180}, {LastN: 2, MaxHeight: 180}, {LastN: 1, MaxHeight: 180}, {LastN: 0, MaxHeight: 180}}

// Floor is the level of audio only.
const Floor = len(ladder) - 1

// Step is one change the controller made.
type Step struct {
	Room     string
	From, To int // levels
	Cap      Cap // the ceiling from now on
}

// Change is what one sample changed.
type Change struct {
	Steps []Step // rooms whose level changed (at most one per sample)
	// AdmitChanged says Admit flipped.
	AdmitChanged bool
}

// Controller holds the rooms' levels. Zero value is not usable: use New.
type Controller struct {
	cfg      Config
	load     float64 // smoothed CPU
	last     time.Time
	lastStep time.Time
	lastOver time.Time
	levels   map[string]int
	refuse   bool
	// effect is, by room and level, how much load leaving that level for the
	// one below took off, or putting it back added (the larger seen): a
	// restore that would bring the load near overuse again waits (B.1's E_L).
	effect map[levelKey]float64
	// watch is the step whose effect the samples are measuring now.
	watch *watch
}

type levelKey struct {
	room  string
	level int
}

// watch measures one step: from base at its start, until until.
type watch struct {
	key   levelKey
	base  float64
	until time.Time
	up    bool
}

// New returns a controller with nothing shed.
func New(cfg Config) *Controller {
	return &Controller{cfg: cfg, levels: map[string]int{}, effect: map[levelKey]float64{}}
}

// Observe takes a sample and the live rooms, and returns what it changed.
func (c *Controller) Observe(s Sample, rooms []Room) Change {
	var ch Change
	c.smooth(s)
	c.track(rooms)
	over := c.load > c.cfg.Overuse
	under := c.load < c.cfg.Underuse
	c.measure(s.At, over)
	switch {
	case over:
		c.lastOver = s.At
		if !c.lastStep.IsZero() && s.At.Sub(c.lastStep) < c.cfg.DownWait {
			break
		}
		if st, ok := c.stepDown(rooms); ok {
			c.lastStep = s.At
			c.watch = &watch{key: levelKey{st.Room, st.From}, base: c.load, until: s.At.Add(2 * c.cfg.Smoothing)}
			ch.Steps = append(ch.Steps, st)
		} else if !c.refuse && len(rooms) > 0 { // nothing left to shed but audio: take nobody more
			// With no room at all the load is no meeting's: refusing
			// the first would protect nobody.
			c.refuse, ch.AdmitChanged = true, true
		}
	case under:
		if c.refuse {
			c.refuse, ch.AdmitChanged = false, true
		}
		if s.At.Sub(c.lastStep) < c.cfg.UpWait || s.At.Sub(c.lastOver) < c.cfg.UpWait {
			break
		}
		if st, ok := c.stepUp(rooms); ok {
			c.lastStep = s.At
			c.watch = &watch{key: levelKey{st.Room, st.To}, base: c.load, until: s.At.Add(c.cfg.UpWait), up: true}
			ch.Steps = append(ch.Steps, st)
		}
	}
	return ch
}

// measure updates the effect of the step being watched: the load it took off,
// or, for a restore followed by overuse, what it put back.
func (c *Controller) measure(now time.Time, over bool) {
	w := c.watch
	if w == nil {
		return
	}
	if !now.Before(w.until) {
		c.watch = nil
		return
	}
	if w.up {
		if over {
			c.effect[w.key] = max(c.effect[w.key], c.load-w.base)
		}
	} else {
		c.effect[w.key] = max(c.effect[w.key], w.base-c.load)
	}
}

// smooth folds s.CPU into the exponential average, weighted by the time it
// covers.
func (c *Controller) smooth(s Sample) {
	dt := s.Span
	if dt <= 0 && !c.last.IsZero() {
		dt = s.At.Sub(c.last)
	}
	if c.cfg.Smoothing <= 0 || dt <= 0 && c.last.IsZero() {
		c.load, c.last = s.CPU, s.At
		return
	}
	if dt <= 0 {
		return
	}
	a := 1 - math.Exp(-float64(dt)/float64(c.cfg.Smoothing))
	c.load += a * (s.CPU - c.load)
	c.last = s.At
}

// track forgets rooms that ended; a new room starts at the lowest level of
// the others, so that opening a room is no way around shedding.
func (c *Controller) track(rooms []Room) {
	live := make(map[string]bool, len(rooms))
	for _, r := range rooms {
		live[r.ID] = true
	}
	lowest := -1
	for k := range c.effect {
		if !live[k.room] {
			delete(c.effect, k)
		}
	}
	for id, l := range c.levels {
		if !live[id] {
			delete(c.levels, id)
		} else if lowest < 0 || l < lowest {
			lowest = l
		}
	}
	for _, r := range rooms {
		if _, ok := c.levels[r.ID]; !ok {
			c.levels[r.ID] = max(lowest, 0)
		}
	}
}

// next is the first level above l that takes video away from r; false when
// nothing is left but audio (or r has no receiver of video at all).
func next(r Room, l int) (int, bool) {
	for n := l + 1; n <= Floor; n++ {
		if differs(r, ladder[n], ladder[l]) {
			return n, true
		}
	}
	return l, false
}

// prev is the level below l that gives r back the video l took: the lowest
// of those that give it the same.
func prev(r Room, l int) int {
	p := l - 1
	for p > 0 && !differs(r, ladder[p], ladder[l]) {
		p--
	}
	for p > 0 && !differs(r, ladder[p-1], ladder[p]) {
		p--
	}
	return max(p, 0)
}

// differs reports whether a and b give r's receivers different video: a Last N
// at or above what a receiver could get anyway is no ceiling.
func differs(r Room, a, b Cap) bool {
	reach := r.Size - 1
	if r.LastN >= 0 {
		reach = min(reach, r.LastN)
	}
	clip := func(n int) int {
		if n < 0 || n > reach {
			return reach
		}
		return n
	}
	return clip(a.LastN) != clip(b.LastN) || (reach > 0 && a.MaxHeight != b.MaxHeight)
}

// stepDown lowers the room with the most left to shed: the lowest level, then
// the largest, then the newest.
func (c *Controller) stepDown(rooms []Room) (Step, bool) {
	order := slices.Clone(rooms)
	slices.SortFunc(order, func(a, b Room) int {
		if d := c.levels[a.ID] - c.levels[b.ID]; d != 0 {
			return d
		}
		if a.Size != b.Size {
			return b.Size - a.Size
		}
		if d := b.Created.Compare(a.Created); d != 0 {
			return d
		}
		return strings.Compare(a.ID, b.ID)
	})
	for _, r := range order {
		from := c.levels[r.ID]
		if to, ok := next(r, from); ok {
			c.levels[r.ID] = to
			return Step{Room: r.ID, From: from, To: to, Cap: ladder[to]}, true
		}
	}
	return Step{}, false
}

// stepUp restores in the reverse order: the highest level, then the
// smallest, then the oldest.
func (c *Controller) stepUp(rooms []Room) (Step, bool) {
	var best Room
	found := false
	for _, r := range rooms {
		if c.levels[r.ID] == 0 {
			continue
		}
		if !found || c.restoresBefore(r, best) {
			best, found = r, true
		}
	}
	if !found {
		return Step{}, false
	}
	from := c.levels[best.ID]
	to := prev(best, from)
	// Restore only what keeps the load well clear of overuse: halfway between
	// the thresholds.
	if c.load+c.effect[levelKey{best.ID, to}] >= (c.cfg.Overuse+c.cfg.Underuse)/2 {
		return Step{}, false
	}
	c.levels[best.ID] = to
	return Step{Room: best.ID, From: from, To: to, Cap: ladder[to]}, true
}

func (c *Controller) restoresBefore(a, b Room) bool {
	if la, lb := c.levels[a.ID], c.levels[b.ID]; la != lb {
		return la > lb
	}
	if a.Size != b.Size {
		return a.Size < b.Size
	}
	if !a.Created.Equal(b.Created) {
		return a.Created.Before(b.Created)
	}
	return a.ID < b.ID
}

// Cap is the ceiling of a room (None for rooms it does not know).
func (c *Controller) Cap(room string) Cap { return ladder[c.levels[room]] }

// Level is a room's level (0: nothing shed; Floor: audio only).
func (c *Controller) Level(room string) int { return c.levels[room] }

// Admit reports whether new participants may join: false once every room is
// down to audio only and the node is still overused, until it is underused.
func (c *Controller) Admit() bool { return !c.refuse }

// Load is the smoothed CPU fraction.
func (c *Controller) Load() float64 { return c.load }
