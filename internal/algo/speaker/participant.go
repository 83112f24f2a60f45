package speaker

import "time"

// history is a fixed ring of the latest levels, preallocated at Add so that
// pushing a level per packet never allocates.
type history struct {
	levels []uint8
	head   int // index of the newest level
}

func newHistory(n int) history {
	return history{levels: make([]uint8, n)}
}

func (h *history) push(level uint8) {
	h.head++
	if h.head == len(h.levels) {
		h.head = 0
	}
	h.levels[h.head] = level
}

// newest returns the i-th newest level (0 is the latest).
func (h *history) newest(i int) uint8 {
	j := h.head - i
	if j < 0 {
		j += len(h.levels)
	}
	return h.levels[j]
}

// participant is one audio sender's local state.
type participant struct {
	id       ID
	levels   history
	floor    noiseFloor
	lastAt   time.Time // time of the newest level, real or injected
	lastReal time.Time // time of the newest real level (or of Add)
	scores   [3]float64
	act      activity
}

func newParticipant(id ID, now time.Time, c Config) *participant {
	return &participant{
		id:       id,
		levels:   newHistory(c.History),
		floor:    noiseFloor{window: c.NoiseFloorWindow},
		lastAt:   now,
		lastReal: now,
	}
}

func (p *participant) observe(now time.Time, level uint8, c *Config) {
	p.fillSilence(now, c)
	p.levels.push(level)
	p.floor.update(level)
	if now.After(p.lastAt) {
		p.lastAt = now
	}
	if now.After(p.lastReal) {
		p.lastReal = now
	}
}

// fillSilence pushes a zero level for every packet slot missing since the
// newest level, once the gap reaches SilenceAfter: a sender in DTX, muted or
// gone must lose its speech activity rather than freeze it. The slot just
// before now is left out because its packet may still be on its way; the work
// is bounded by the history length since older zeros would be overwritten.
func (p *participant) fillSilence(now time.Time, c *Config) {
	gap := now.Sub(p.lastAt)
	if gap < c.SilenceAfter {
		return
	}
	missing := int(gap/c.LevelInterval) - 1
	if missing >= len(p.levels.levels) {
		for range len(p.levels.levels) {
			p.levels.push(0)
		}
		p.lastAt = now.Add(-c.LevelInterval)
		return
	}
	for range missing {
		p.levels.push(0)
	}
	p.lastAt = p.lastAt.Add(time.Duration(missing) * c.LevelInterval)
}

// evaluate refreshes the participant's activity and log scores.
func (p *participant) evaluate(s *scales) {
	p.act = s.activity(&p.levels, p.floor.floor)
	p.scores = s.logScores(p.act)
}
