package speaker

import (
	"math/rand"
	"slices"
	"sort"
	"time"
)

// Synthetic audio-level traces. Everything is in 20 ms packet slots with raw
// RFC 6464 values (0 = loudest, 127 = silence, in −dBov); noPacket marks a
// slot without a packet (DTX, mute, stopped sender).

const (
	slotDur  = 20 * time.Millisecond
	noPacket = -1
)

func slots(d time.Duration) int { return int(d / slotDur) }

// voice describes how one participant sounds.
type voice struct {
	speech int  // raw level of speech (lower is louder)
	noise  int  // raw level of the background noise; 127 = digital silence (muted track)
	dtx    bool // while silent, one comfort-noise packet every 400 ms (Opus DTX)
	off    bool // while silent, no packets at all (stopped sender)
}

// track builds one participant's levels slot by slot.
type track struct {
	r         *rand.Rand
	v         voice
	levels    []int16
	sentences [][2]int // [start, end) slots of each sentence
}

func newTrack(r *rand.Rand, v voice) *track { return &track{r: r, v: v} }

func (t *track) len() int { return len(t.levels) }

func (t *track) jitter(base, spread int) int16 {
	return int16(min(127, max(0, base+t.r.Intn(2*spread+1)-spread)))
}

func (t *track) quiet(n int) {
	for range n {
		switch {
		case t.v.off, t.v.dtx && t.len()%20 != 0:
			t.levels = append(t.levels, noPacket)
		case t.v.noise >= 127:
			t.levels = append(t.levels, 127)
		default:
			t.levels = append(t.levels, t.jitter(t.v.noise, 2))
		}
	}
}

// silence appends d of what the voice sends while silent.
func (t *track) silence(d time.Duration) { t.quiet(slots(d)) }

// until appends silence up to slot n.
func (t *track) until(n int) { t.quiet(n - t.len()) }

// syllable appends one burst at speaking level with a softer onset and decay.
func (t *track) syllable(n int) {
	for i := range n {
		base := t.v.speech
		if i == 0 || i == n-1 {
			base += 6 // the edges of a syllable are ~6 dB softer
		}
		t.levels = append(t.levels, t.jitter(base, 4))
	}
}

// gap appends a short dip inside a sentence: the level falls most of the way
// to the noise floor.
func (t *track) gap(n int) {
	for range n {
		t.levels = append(t.levels, t.jitter((t.v.speech+2*min(t.v.noise, 100))/3, 3))
	}
}

// sentence appends syllables of 100-240 ms separated by dips of 20-80 ms
// for d; it starts and ends on a syllable.
func (t *track) sentence(d time.Duration) {
	start := t.len()
	end := start + slots(d)
	for t.len() < end {
		t.syllable(min(5+t.r.Intn(8), end-t.len()))
		if t.len() < end-1 {
			t.gap(min(1+t.r.Intn(4), end-t.len()-1))
		}
	}
	t.sentences = append(t.sentences, [2]int{start, t.len()})
}

// speech appends sentences of 1.5-3.5 s separated by pauses of 300-700 ms
// for about d; it starts with a syllable and never runs past d.
func (t *track) speech(d time.Duration) {
	end := t.len() + slots(d)
	for {
		t.sentence(min(slotTime(end-t.len()), 1500*time.Millisecond+slotTime(t.r.Intn(slots(2*time.Second)))))
		if t.len() >= end-slots(time.Second) {
			return
		}
		t.quiet(15 + t.r.Intn(21))
	}
}

// word appends a one-word interjection ("yes", "right") of 300-400 ms: one or
// two syllables.
func (t *track) word() {
	n := 15 + t.r.Intn(6)
	if t.r.Intn(2) == 0 {
		t.syllable(n)
		return
	}
	a := 6 + t.r.Intn(n-10)
	t.syllable(a)
	t.gap(2)
	t.syllable(n - a - 2)
}

// click appends a transient noise of 1-3 very loud packets.
func (t *track) click() {
	for range 1 + t.r.Intn(3) {
		t.levels = append(t.levels, t.jitter(5, 5))
	}
}

// packet is one level arriving at the SFU.
type packet struct {
	at  time.Duration
	id  ID
	raw uint8
}

// timedEvent is an event with its simulated time.
type timedEvent struct {
	t time.Duration
	Event
}

// simulate plays tracks into a detector in time order, calling HandleTimeout
// exactly at NextTimeout as an owner loop would, and returns the events. Each
// participant gets a random packet phase and up to 15 ms of arrival jitter.
func simulate(d *Detector, r *rand.Rand, ids []ID, tracks []*track) []timedEvent {
	epoch := time.Unix(1_700_000_000, 0)
	var pkts []packet
	end := 0
	for i, tr := range tracks {
		phase := time.Duration(r.Intn(20)) * time.Millisecond
		for s, v := range tr.levels {
			if v != noPacket {
				j := time.Duration(r.Intn(15)) * time.Millisecond
				pkts = append(pkts, packet{time.Duration(s)*slotDur + phase + j, ids[i], uint8(v)})
			}
		}
		end = max(end, tr.len())
	}
	sort.SliceStable(pkts, func(a, b int) bool { return pkts[a].at < pkts[b].at })

	for _, id := range ids {
		d.Add(epoch, id)
	}
	var events []timedEvent
	runUntil := func(t time.Duration) {
		for n := d.NextTimeout(); !n.IsZero() && n.Sub(epoch) <= t; n = d.NextTimeout() {
			if ev, ok := d.HandleTimeout(n); ok {
				events = append(events, timedEvent{n.Sub(epoch), ev})
			}
		}
	}
	for _, p := range pkts {
		runUntil(p.at)
		d.Observe(epoch.Add(p.at), p.id, p.raw)
	}
	runUntil(time.Duration(end) * slotDur)
	return events
}

// dominantAt returns the dominant speaker at time t according to events.
func dominantAt(events []timedEvent, t time.Duration) ID {
	var id ID
	for _, e := range events {
		if e.t > t {
			break
		}
		id = e.Dominant
	}
	return id
}

// between returns the events in [from, to).
func between(events []timedEvent, from, to time.Duration) []timedEvent {
	var out []timedEvent
	for _, e := range events {
		if e.t >= from && e.t < to {
			out = append(out, e)
		}
	}
	return out
}

// firstSwitchTo returns the time of the first event making id dominant at or
// after from.
func firstSwitchTo(events []timedEvent, id ID, from time.Duration) (time.Duration, bool) {
	for _, e := range events {
		if e.t >= from && e.Dominant == id {
			return e.t, true
		}
	}
	return 0, false
}

func slotTime(s int) time.Duration { return time.Duration(s) * slotDur }

// percentile returns the p-quantile (nearest rank) of ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(p*float64(len(s))+0.999999) - 1
	return s[min(max(i, 0), len(s)-1)]
}
