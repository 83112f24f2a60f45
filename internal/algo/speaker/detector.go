package speaker

import (
	"slices"
	"time"
)

// ID identifies a participant.
type ID string

// Event reports a change of dominant speaker. Dominant is empty when the
// dominant speaker left and nobody has spoken since.
type Event struct {
	Dominant ID
	Previous ID
}

// Detector identifies the dominant speaker. It is not safe for concurrent
// use: one loop owns it, passes the time in and calls HandleTimeout when
// NextTimeout is due.
type Detector struct {
	cfg    Config
	scales scales
	silent [3]float64 // log scores of a silent participant

	byID  map[ID]*participant
	parts []*participant // in order of arrival, so ties break the same way every run

	dominant ID
	reported ID        // dominant speaker as of the last event
	next     time.Time // next decision; zero when nothing is scheduled
}

// New returns a detector. It panics if cfg is invalid (see Config.Validate):
// parameters are fixed at build time, so an invalid one is a programming error.
func New(cfg Config) *Detector {
	if err := cfg.Validate(); err != nil {
		panic("speaker: invalid config: " + err.Error())
	}
	d := &Detector{cfg: cfg, scales: newScales(cfg), byID: make(map[ID]*participant)}
	d.silent = d.scales.logScores(activity{})
	return d
}

// Add registers a participant. Adding a known participant does nothing.
func (d *Detector) Add(now time.Time, id ID) {
	d.add(now, id)
}

func (d *Detector) add(now time.Time, id ID) *participant {
	if p, ok := d.byID[id]; ok {
		return p
	}
	p := newParticipant(id, now, d.cfg)
	d.byID[id] = p
	d.parts = append(d.parts, p)
	if d.next.IsZero() {
		d.next = now.Add(d.cfg.DecisionInterval)
	}
	return p
}

// Remove forgets a participant. If it was dominant, nobody is dominant until
// the next decision picks whoever is speaking; that decision reports the change.
func (d *Detector) Remove(now time.Time, id ID) {
	if _, ok := d.byID[id]; !ok {
		return
	}
	delete(d.byID, id)
	d.parts = slices.DeleteFunc(d.parts, func(p *participant) bool { return p.id == id })
	if d.dominant == id {
		d.dominant = ""
	}
}

// Observe records the audio level of one packet: rfc6464 is the raw 7-bit
// header value (0 = loudest, 127 = silence; the voice-activity bit is
// ignored). An unknown participant is added, which allocates once; otherwise
// Observe does not allocate.
func (d *Detector) Observe(now time.Time, id ID, rfc6464 uint8) {
	p, ok := d.byID[id]
	if !ok {
		p = d.add(now, id)
	}
	p.observe(now, Level(rfc6464), &d.cfg)
}

// Follow makes id the dominant speaker, decided elsewhere (the conference's
// speaker order is written by one bridge, docs/cluster.md): no event reports
// it, and the next decisions measure competitors against id, as the deciding
// detector does, so that this one can take over from the same state.
func (d *Detector) Follow(id ID) {
	d.dominant, d.reported = id, id
}

// Dominant returns the current dominant speaker, or "" if there is none.
func (d *Detector) Dominant() ID {
	return d.dominant
}

// NextTimeout returns when HandleTimeout must next be called; the zero Time
// means nothing is scheduled (no participants and no change to report).
func (d *Detector) NextTimeout() time.Time {
	return d.next
}

// HandleTimeout makes the global decision if it is due and reports a change of
// dominant speaker. Silence for missing levels is injected here, lazily: the
// levels are only read at decisions, so injecting them at each 40 ms deadline
// would give the same scores at the cost of a timer per participant.
func (d *Detector) HandleTimeout(now time.Time) (Event, bool) {
	if d.next.IsZero() || now.Before(d.next) {
		return Event{}, false
	}
	d.next = d.next.Add(d.cfg.DecisionInterval)
	if !d.next.After(now) {
		// The owner fell behind; keep the interval rather than catch up in a burst.
		d.next = now.Add(d.cfg.DecisionInterval)
	}

	d.refresh(now)
	d.decide()

	ev, changed := Event{Dominant: d.dominant, Previous: d.reported}, d.dominant != d.reported
	d.reported = d.dominant
	if len(d.parts) == 0 {
		d.next = time.Time{}
	}
	return ev, changed
}

// refresh brings every participant's levels up to now, forgets idle
// non-dominant participants and evaluates the scores.
func (d *Detector) refresh(now time.Time) {
	kept := d.parts[:0]
	for _, p := range d.parts {
		if p.id != d.dominant && now.Sub(p.lastReal) >= d.cfg.IdleTimeout {
			delete(d.byID, p.id)
			continue
		}
		p.fillSilence(now, &d.cfg)
		p.evaluate(&d.scales)
		kept = append(kept, p)
	}
	clear(d.parts[len(kept):])
	d.parts = kept
}

// decide switches to the competitor whose scores exceed the dominant
// speaker's by C1, C2 and C3 on the immediate, medium and long scales; among
// several, the largest medium ratio wins (then the long one, then arrival
// order). With nobody dominant, competitors are measured against silence, so
// the first participant to speak takes over without having to beat anyone.
func (d *Detector) decide() {
	ref := d.silent
	if p, ok := d.byID[d.dominant]; ok {
		ref = p.scores
	}
	var best *participant
	var bestC2, bestC3 float64
	for _, p := range d.parts {
		if p.id == d.dominant {
			continue
		}
		c1 := p.scores[0] - ref[0]
		c2 := p.scores[1] - ref[1]
		c3 := p.scores[2] - ref[2]
		if c1 <= d.cfg.C1 || c2 <= d.cfg.C2 || c3 <= d.cfg.C3 {
			continue
		}
		if best == nil || c2 > bestC2 || (c2 == bestC2 && c3 > bestC3) {
			best, bestC2, bestC3 = p, c2, c3
		}
	}
	if best != nil {
		d.dominant = best.id
	}
}
