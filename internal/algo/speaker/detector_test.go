package speaker

import (
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"
)

var t0 = time.Unix(1_700_000_000, 0)

// driver feeds a detector slot by slot under a fake clock.
type driver struct {
	d      *Detector
	now    time.Time
	events []Event
}

func newDriver(cfg Config, ids ...ID) *driver {
	dr := &driver{d: New(cfg), now: t0}
	for _, id := range ids {
		dr.d.Add(t0, id)
	}
	return dr
}

type send struct {
	id  ID
	raw uint8
}

// run plays n 20 ms slots in which the given participants each send one
// packet (others send nothing), handling timeouts as they fall due.
func (dr *driver) run(n int, sends ...send) {
	for range n {
		for _, s := range sends {
			dr.d.Observe(dr.now, s.id, s.raw)
		}
		dr.advance(slotDur)
	}
}

// noise sends 200 ms of background noise from each id, so that their noise
// floors are known: a level as low as the floor counts as silence.
func (dr *driver) noise(ids ...ID) {
	var sends []send
	for _, id := range ids {
		sends = append(sends, send{id, 80})
	}
	dr.run(10, sends...)
}

func (dr *driver) advance(d time.Duration) {
	end := dr.now.Add(d)
	for n := dr.d.NextTimeout(); !n.IsZero() && !n.After(end); n = dr.d.NextTimeout() {
		if ev, ok := dr.d.HandleTimeout(n); ok {
			dr.events = append(dr.events, ev)
		}
	}
	dr.now = end
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("default config invalid: %v", err)
	}
	for _, c := range []struct {
		name   string
		modify func(*Config)
		want   string
	}{
		{"history", func(c *Config) { c.History = 40 }, "History"},
		{"subbands", func(c *Config) { c.Subbands = 0 }, "Subbands"},
		{"p", func(c *Config) { c.P = 1 }, "P must"},
		{"lambda", func(c *Config) { c.LambdaMedium = 0 }, "lambdas"},
		{"interval", func(c *Config) { c.DecisionInterval = 0 }, "DecisionInterval"},
		{"silence", func(c *Config) { c.SilenceAfter = 10 * time.Millisecond }, "SilenceAfter"},
	} {
		cfg := DefaultConfig()
		c.modify(&cfg)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Validate() = %v, want an error mentioning %q", c.name, err, c.want)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("New accepted an invalid config")
		}
	}()
	New(Config{})
}

func TestEmptyDetector(t *testing.T) {
	d := New(DefaultConfig())
	if !d.NextTimeout().IsZero() || d.Dominant() != "" {
		t.Fatalf("new detector: NextTimeout %v, Dominant %q", d.NextTimeout(), d.Dominant())
	}
	if _, ok := d.HandleTimeout(t0); ok {
		t.Fatal("event from an empty detector")
	}
	d.Remove(t0, "nobody")
	d.Add(t0, "a")
	if want := t0.Add(300 * time.Millisecond); !d.NextTimeout().Equal(want) {
		t.Fatalf("NextTimeout = %v, want %v", d.NextTimeout(), want)
	}
	if _, ok := d.HandleTimeout(t0.Add(299 * time.Millisecond)); ok {
		t.Fatal("event before the decision is due")
	}
	if !d.NextTimeout().Equal(t0.Add(300 * time.Millisecond)) {
		t.Fatal("an early HandleTimeout moved the schedule")
	}
}

// The first participant to speak becomes dominant: there is nobody to beat.
func TestFirstSpeakerBecomesDominant(t *testing.T) {
	dr := newDriver(DefaultConfig(), "a", "b", "c")
	dr.noise("b")
	dr.run(100, send{"a", 90}, send{"b", 127}) // background noise and silence
	if len(dr.events) != 0 {
		t.Fatalf("events during silence: %v", dr.events)
	}
	dr.run(10, send{"a", 90}, send{"b", 20}) // b says something for 200 ms
	if want := []Event{{Dominant: "b"}}; !slices.Equal(dr.events, want) {
		t.Fatalf("events %v, want %v", dr.events, want)
	}
}

func TestSingleParticipant(t *testing.T) {
	dr := newDriver(DefaultConfig())
	dr.noise("solo") // Observe adds an unknown participant
	dr.run(20, send{"solo", 20})
	if dr.d.Dominant() != "solo" {
		t.Fatalf("Dominant() = %q, want solo", dr.d.Dominant())
	}
}

func TestRemoveDominant(t *testing.T) {
	dr := newDriver(DefaultConfig(), "a", "b")
	dr.noise("a", "b")
	dr.run(50, send{"a", 20}, send{"b", 80})
	dr.d.Remove(dr.now, "a")
	if dr.d.Dominant() != "" {
		t.Fatalf("Dominant() = %q after removing it", dr.d.Dominant())
	}
	dr.run(20, send{"b", 80}) // b is silent: nobody is dominant, and that is reported
	want := []Event{{Dominant: "a"}, {Dominant: "", Previous: "a"}}
	if !slices.Equal(dr.events, want) {
		t.Fatalf("events %v, want %v", dr.events, want)
	}
	dr.run(20, send{"b", 20}) // b speaks and takes over
	want = append(want, Event{Dominant: "b"})
	if !slices.Equal(dr.events, want) {
		t.Fatalf("events %v, want %v", dr.events, want)
	}
}

func TestRemoveDominantWhileOtherSpeaks(t *testing.T) {
	dr := newDriver(DefaultConfig(), "a", "b")
	dr.noise("a", "b")
	dr.run(50, send{"a", 20}, send{"b", 80})
	dr.run(50, send{"a", 20}, send{"b", 20}) // both talk; a keeps the floor
	dr.d.Remove(dr.now, "a")
	dr.run(20, send{"b", 20})
	want := []Event{{Dominant: "a"}, {Dominant: "b", Previous: "a"}}
	if !slices.Equal(dr.events, want) {
		t.Fatalf("events %v, want %v", dr.events, want)
	}
}

func TestRemoveLastParticipant(t *testing.T) {
	dr := newDriver(DefaultConfig(), "a")
	dr.noise("a")
	dr.run(20, send{"a", 20})
	dr.d.Remove(dr.now, "a")
	if dr.d.NextTimeout().IsZero() {
		t.Fatal("the departure of the dominant speaker is not reported")
	}
	dr.advance(time.Second)
	if want := []Event{{Dominant: "a"}, {Previous: "a"}}; !slices.Equal(dr.events, want) {
		t.Fatalf("events %v, want %v", dr.events, want)
	}
	if !dr.d.NextTimeout().IsZero() {
		t.Fatalf("NextTimeout = %v with nobody left", dr.d.NextTimeout())
	}
	dr.d.Add(dr.now, "b")
	if dr.d.NextTimeout().IsZero() {
		t.Fatal("nothing scheduled after Add")
	}
}

func TestAddTwiceKeepsState(t *testing.T) {
	dr := newDriver(DefaultConfig(), "a", "b")
	dr.noise("a")
	dr.run(50, send{"a", 20})
	dr.d.Add(dr.now, "a")
	dr.run(1, send{"a", 20})
	if dr.d.Dominant() != "a" || len(dr.d.parts) != 2 || dr.d.byID["a"].act.long == 0 {
		t.Fatalf("re-adding a changed its state: dominant %q, %d participants, activity %+v",
			dr.d.Dominant(), len(dr.d.parts), dr.d.byID["a"].act)
	}
}

// A participant that stops sending (mute, DTX, gone) loses its activity,
// through silence injected for the gap; otherwise its last second of speech
// would stay frozen in the history and nobody could ever beat it.
func TestMissingLevelsCountAsSilence(t *testing.T) {
	dr := newDriver(DefaultConfig(), "a", "b")
	dr.noise("a", "b")
	dr.run(100, send{"a", 20})
	dr.run(60) // nobody sends for 1.2 s
	if act := dr.d.byID["a"].act; act != (activity{}) {
		t.Fatalf("activity after 1.2 s without packets = %+v, want none", act)
	}
	if dr.d.Dominant() != "a" {
		t.Fatalf("the dominant speaker changed during silence: %q", dr.d.Dominant())
	}
	dr.run(20, send{"b", 20})
	if dr.d.Dominant() != "b" {
		t.Fatalf("b did not take over from a silent a: %q", dr.d.Dominant())
	}
}

func TestFillSilence(t *testing.T) {
	cfg := DefaultConfig()
	cases := []struct {
		gap       time.Duration
		zeros     int
		newLastAt time.Duration
	}{
		{39 * time.Millisecond, 0, 0},                     // jitter, not silence
		{40 * time.Millisecond, 1, 20 * time.Millisecond}, // one packet lost; the next may be on its way
		{100 * time.Millisecond, 4, 80 * time.Millisecond},
		{time.Hour, 50, time.Hour - 20*time.Millisecond}, // bounded by the history
	}
	for _, c := range cases {
		p := newParticipant("a", t0, cfg)
		for range 50 {
			p.levels.push(100)
		}
		p.fillSilence(t0.Add(c.gap), &cfg)
		zeros := 0
		for i := range 50 {
			if p.levels.newest(i) == 0 {
				zeros++
			}
		}
		if zeros != c.zeros || !p.lastAt.Equal(t0.Add(c.newLastAt)) {
			t.Errorf("gap %v: %d zeros, lastAt +%v; want %d, +%v", c.gap, zeros, p.lastAt.Sub(t0), c.zeros, c.newLastAt)
		}
	}
}

func TestIdleRemoval(t *testing.T) {
	cfg := DefaultConfig()
	cfg.IdleTimeout = 10 * time.Second
	dr := newDriver(cfg, "a", "b", "c")
	dr.noise("a", "b", "c")
	dr.run(50, send{"a", 20}, send{"b", 80})
	dr.run(600, send{"b", 80}) // 12 s: a (dominant) and c send nothing
	if _, ok := dr.d.byID["c"]; ok {
		t.Error("idle c not forgotten")
	}
	if _, ok := dr.d.byID["a"]; !ok || dr.d.Dominant() != "a" {
		t.Error("the idle dominant speaker was forgotten")
	}
	if _, ok := dr.d.byID["b"]; !ok {
		t.Error("b, which sends levels, was forgotten")
	}
	dr.noise("c") // c comes back (a new noise floor) and speaks
	dr.run(20, send{"c", 20})
	if dr.d.Dominant() != "c" {
		t.Errorf("c did not come back: dominant %q", dr.d.Dominant())
	}
}

func TestLateTimeoutKeepsInterval(t *testing.T) {
	d := New(DefaultConfig())
	d.Add(t0, "a")
	late := t0.Add(2 * time.Second)
	d.HandleTimeout(late)
	if want := late.Add(300 * time.Millisecond); !d.NextTimeout().Equal(want) {
		t.Fatalf("NextTimeout after a late call = %v, want %v", d.NextTimeout().Sub(t0), want.Sub(t0))
	}
}

// Same trace, same events: the detector has no hidden input.
func TestDeterministic(t *testing.T) {
	run := func() []timedEvent {
		s := newScene(7, loud, quiet, dtx, muted, off)
		for turn := range 15 {
			tr := s.tracks[(turn*3)%5]
			tr.until(slots(time.Duration(turn) * 3 * time.Second))
			tr.speech(3 * time.Second)
		}
		return s.run()
	}
	a, b := run(), run()
	if len(a) < 10 || !slices.Equal(a, b) {
		t.Fatalf("runs differ or say little:\n%v\n%v", a, b)
	}
}

// load is a detector in steady state: n participants that have all sent
// levels for a while, fed in round-robin order at 20 ms per round.
type load struct {
	d   *Detector
	ids []ID
	r   *rand.Rand
	now time.Time
	k   int
}

func newLoad(n int) *load {
	l := &load{d: New(DefaultConfig()), r: rand.New(rand.NewSource(1)), now: t0}
	for i := range n {
		l.ids = append(l.ids, ID("participant-"+string(rune('A'+i))))
		l.d.Add(t0, l.ids[i])
	}
	for range 60 * n {
		l.observe()
		l.decide()
	}
	return l
}

// observe sends the next participant's packet.
func (l *load) observe() {
	l.d.Observe(l.now, l.ids[l.k], uint8(10+l.r.Intn(100)))
	if l.k++; l.k == len(l.ids) {
		l.k = 0
		l.now = l.now.Add(slotDur)
	}
}

// decide runs the decision if it is due.
func (l *load) decide() {
	if !l.d.NextTimeout().After(l.now) {
		l.d.HandleTimeout(l.now)
	}
}

// interval sends 300 ms of packets, one decision interval.
func (l *load) interval() {
	for range 15 * len(l.ids) {
		l.observe()
	}
}

func TestObserveDoesNotAllocate(t *testing.T) {
	l := newLoad(30)
	if a := testing.AllocsPerRun(10000, l.observe); a != 0 {
		t.Fatalf("Observe allocates %v times per call", a)
	}
}

func TestHandleTimeoutDoesNotAllocate(t *testing.T) {
	l := newLoad(30)
	decisions := 0
	a := testing.AllocsPerRun(200, func() {
		l.interval()
		if !l.d.NextTimeout().After(l.now) {
			decisions++
		}
		l.decide()
	})
	if a != 0 || decisions < 200 {
		t.Fatalf("%v allocations per decision interval (%d decisions)", a, decisions)
	}
}

func BenchmarkObserve(b *testing.B) {
	l := newLoad(30)
	b.ReportAllocs()
	for b.Loop() {
		l.observe()
	}
}

// BenchmarkDecision30 times one decision among 30 participants.
func BenchmarkDecision30(b *testing.B) {
	l := newLoad(30)
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		l.interval()
		b.StartTimer()
		l.decide()
	}
}

// A gap that ends between two decisions is filled with silence when the next
// level arrives, so the levels keep their place in time.
func TestObserveFillsGap(t *testing.T) {
	d := New(DefaultConfig())
	d.Add(t0, "a")
	for i := range 60 { // 1.2 s of background noise
		d.Observe(t0.Add(time.Duration(i)*slotDur), "a", 80)
	}
	for n := t0; !n.After(t0.Add(1200 * time.Millisecond)); n = n.Add(300 * time.Millisecond) {
		d.HandleTimeout(n)
	}
	if !d.NextTimeout().Equal(t0.Add(1500 * time.Millisecond)) {
		t.Fatalf("NextTimeout %v, want +1.5s", d.NextTimeout().Sub(t0))
	}
	// Speech up to +1.4 s, nothing for 200 ms, one packet at +1.6 s.
	for i := range 10 {
		d.Observe(t0.Add(1200*time.Millisecond+time.Duration(i)*slotDur), "a", 20)
	}
	d.Observe(t0.Add(1600*time.Millisecond), "a", 20)
	d.HandleTimeout(t0.Add(1600 * time.Millisecond))
	if got, want := d.byID["a"].act, (activity{immediate: 10, medium: 1, long: 1}); got != want {
		t.Fatalf("activity %+v, want %+v (10 zeros before the last level)", got, want)
	}
}

// Among several competitors that beat the dominant speaker, the largest
// medium ratio wins, then the largest long ratio, then the earliest arrival.
func TestDecideSelection(t *testing.T) {
	silent := activity{}
	cases := []struct {
		name     string
		dominant ID
		acts     []activity // of a, b, c
		want     ID
	}{
		{"nobody speaks", "", []activity{silent, silent, silent}, ""},
		{"the dominant keeps the floor", "a", []activity{silent, silent, silent}, "a"},
		{"the most active in the last 100 ms", "a", []activity{silent, {9, 2, 5}, {9, 5, 1}}, "c"},
		{"then the most active in the last second", "a", []activity{silent, {9, 5, 3}, {9, 5, 4}}, "c"},
		{"then the first to arrive", "a", []activity{silent, {9, 5, 3}, {9, 5, 3}}, "b"},
		{"against silence when nobody is dominant", "", []activity{{9, 5, 1}, {9, 5, 2}, silent}, "b"},
		{"only those beating the dominant", "c", []activity{{9, 5, 2}, {9, 5, 3}, {0, 0, 3}}, "c"},
	}
	for _, c := range cases {
		d := New(DefaultConfig())
		for i, act := range c.acts {
			p := d.add(t0, ID(rune('a'+i)))
			p.act, p.scores = act, d.scales.logScores(act)
		}
		d.dominant = c.dominant
		d.decide()
		if d.dominant != c.want {
			t.Errorf("%s: dominant %q, want %q", c.name, d.dominant, c.want)
		}
	}
}

// TestFollow: a detector told whom another bridge's detector chose reports
// no event for it, and measures the next competitor against it, so it can
// take over the decisions from the same state.
func TestFollow(t *testing.T) {
	dr := newDriver(DefaultConfig(), "a", "b")
	dr.noise("a", "b")
	dr.run(50, send{"a", 20}, send{"b", 80})
	if want := []Event{{Dominant: "a"}}; !slices.Equal(dr.events, want) {
		t.Fatalf("events %v, want %v", dr.events, want)
	}
	dr.d.Follow("b") // decided elsewhere
	if dr.d.Dominant() != "b" {
		t.Fatalf("Dominant() = %q after Follow(b)", dr.d.Dominant())
	}
	dr.run(50, send{"a", 80}, send{"b", 20})
	if len(dr.events) != 1 {
		t.Fatalf("events after Follow(b) while b speaks: %v", dr.events[1:])
	}
	dr.run(100, send{"a", 20}, send{"b", 80})
	if want := []Event{{Dominant: "a"}, {Dominant: "a", Previous: "b"}}; !slices.Equal(dr.events, want) {
		t.Fatalf("events %v, want %v", dr.events, want)
	}
}
