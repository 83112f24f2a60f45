// Package audiosel chooses whose audio a room forwards when it has more
// microphones than each receiver should get: at most Slots speakers, chosen
// from the speaker detector's activity, the dominant speaker always among
// them, and a speaker kept for Hold after it last spoke, so nobody is cut
// mid-word and two speakers taking turns do not flap. Pure: time is passed in.
package audiosel

import (
	"slices"
	"time"
)

// ID identifies a participant.
type ID string

// Config holds the selection's parameters.
type Config struct {
	// Slots is the most speakers selected (A); at least 1.
	Slots int
	// Hold is how long a selected speaker stays selected after it last
	// spoke, whoever else starts speaking.
	Hold time.Duration
	// Speaking is the Score from which a candidate counts as speaking.
	Speaking float64
}

// DefaultHold keeps a speaker through the pauses between words and sentences.
const DefaultHold = 2 * time.Second

// DefaultSpeaking is the Score (see Candidate) of a participant with one
// active 100 ms block in the last second, or most of its newest block active.
const DefaultSpeaking = 0.5

// Candidate is a participant whose audio could be selected.
type Candidate struct {
	ID ID
	// Score measures its recent speech (higher: more); the room derives it
	// from the detector's long and medium scales.
	Score float64
}

type entry struct {
	id    ID
	spoke time.Time // when it was last seen speaking (zero: never since it entered)
	score float64   // as of the last update
}

// Selector keeps the selection between updates. Not safe for concurrent use:
// the room loop owns it.
type Selector struct {
	cfg Config
	sel []entry
}

// New returns a selector; cfg.Slots below 1 counts as 1.
func New(cfg Config) *Selector {
	cfg.Slots = max(cfg.Slots, 1)
	return &Selector{cfg: cfg, sel: make([]entry, 0, cfg.Slots)}
}

// SetSlots changes how many speakers are selected; when it shrinks, the
// speakers silent longest leave first (the dominant one stays).
func (s *Selector) SetSlots(n int, dominant ID) {
	s.cfg.Slots = max(n, 1)
	for len(s.sel) > s.cfg.Slots {
		v := s.victim(dominant, time.Time{}, true)
		s.sel = slices.Delete(s.sel, v, v+1)
	}
}

// Update brings the selection up to now: cands are the participants that
// publish audio (in a stable order, which breaks ties) and dominant the
// detector's dominant speaker ("" for none). It returns the selected speakers
// in dst, each keeping its position while it stays selected.
func (s *Selector) Update(now time.Time, dominant ID, cands []Candidate, dst []ID) []ID {
	s.sel = slices.DeleteFunc(s.sel, func(e entry) bool { return index(cands, e.id) < 0 })
	for i := range s.sel {
		c := cands[index(cands, s.sel[i].id)]
		s.sel[i].score = c.Score
		if c.Score >= s.cfg.Speaking || c.ID == dominant {
			s.sel[i].spoke = now
		}
	}
	if dominant != "" && index(cands, dominant) >= 0 && s.find(dominant) < 0 {
		s.enter(cands[index(cands, dominant)], now, s.victim(dominant, now, true))
	}
	// Speakers not selected, loudest first, take free or expired places.
	for _, c := range s.ranked(cands) {
		if c.Score < s.cfg.Speaking {
			break
		}
		v := s.victim(dominant, now, false)
		if len(s.sel) == s.cfg.Slots && v < 0 {
			break
		}
		s.enter(c, now, v)
	}
	// Free places go to the others, so a room with no more than Slots
	// publishers forwards everyone; they leave as soon as someone speaks.
	for _, c := range s.ranked(cands) {
		if len(s.sel) == s.cfg.Slots {
			break
		}
		s.sel = append(s.sel, entry{id: c.ID, score: c.Score})
	}
	for _, e := range s.sel {
		dst = append(dst, e.id)
	}
	return dst
}

// enter selects c at a free place, or in place of entry v.
func (s *Selector) enter(c Candidate, now time.Time, v int) {
	e := entry{id: c.ID, spoke: now, score: c.Score}
	if len(s.sel) < s.cfg.Slots {
		s.sel = append(s.sel, e)
		return
	}
	s.sel[v] = e
}

// victim is the entry to give up for a newcomer while the selection is
// full: the one silent longest (then the quietest), if past Hold (force:
// whatever its silence), never the dominant speaker; -1 for none.
func (s *Selector) victim(dominant ID, now time.Time, force bool) int {
	v := -1
	for i, e := range s.sel {
		if e.id == dominant || !force && now.Sub(e.spoke) < s.cfg.Hold {
			continue
		}
		if v < 0 || e.spoke.Before(s.sel[v].spoke) || e.spoke.Equal(s.sel[v].spoke) && e.score < s.sel[v].score {
			v = i
		}
	}
	return v
}

// ranked lists the candidates not selected, highest score first (stable).
func (s *Selector) ranked(cands []Candidate) []Candidate {
	out := make([]Candidate, 0, len(cands))
	for _, c := range cands {
		if s.find(c.ID) < 0 {
			out = append(out, c)
		}
	}
	slices.SortStableFunc(out, func(a, b Candidate) int {
		switch {
		case a.Score > b.Score:
			return -1
		case a.Score < b.Score:
			return 1
		}
		return 0
	})
	return out
}

func (s *Selector) find(id ID) int {
	return slices.IndexFunc(s.sel, func(e entry) bool { return e.id == id })
}

func index(cands []Candidate, id ID) int {
	return slices.IndexFunc(cands, func(c Candidate) bool { return c.ID == id })
}

// ScoreOf is a Candidate's Score from the speaker detector's activity: long
// active blocks of the last second, and medium active levels of the newest
// block of mediumBlock levels (so medium breaks ties between equal longs).
func ScoreOf(long, medium, mediumBlock int) float64 {
	return float64(long) + float64(medium)/float64(mediumBlock+1)
}
