package bwe

import (
	"math"
	"math/rand"
	"testing"
	"time"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// driver is a minimal link for estimator tests: packets of 1200 bytes at the
// rate the test asks, a bottleneck of capacity bits/s with an unbounded queue,
// 20 ms propagation, optional loss, and feedback every 50 ms covering what
// arrived (returned instantly). It is deterministic.
type driver struct {
	e        *Estimator
	now      time.Duration
	seq      uint16
	capacity float64
	busy     time.Duration
	lose     func(n int) bool
	sent     int
	inFlight []flight
	fb       Feedback
	credit   float64
	pad      float64
	others   time.Duration // queueing delay others' flows add to every arrival
}

type flight struct {
	seq      uint16
	arrival  time.Duration
	received bool
	read     bool // a busy receiver's read has stamped its arrival (busy_test.go)
}

func newDriver(cfg Config, capacity float64) *driver {
	return &driver{e: New(cfg), capacity: capacity}
}

func (d *driver) send(size int, probe bool) {
	d.e.OnSent(epoch.Add(d.now), d.seq, size, probe)
	d.sent++
	f := flight{seq: d.seq}
	if d.lose == nil || !d.lose(d.sent) {
		start := max(d.now, d.busy)
		d.busy = start + time.Duration(float64(size*8)/d.capacity*float64(time.Second))
		f.arrival, f.received = d.busy+20*ms1+d.others, true
	} else {
		f.arrival = d.now + 20*ms1
	}
	d.inFlight = append(d.inFlight, f)
	d.seq++
}

// run advances time by dur, sending media at rate bits/s (plus probe padding
// when probeFor > 0 asks for it) and processing feedback.
func (d *driver) run(dur time.Duration, rate float64, probeFor int) {
	end := d.now + dur
	for ; d.now < end; d.now += ms1 {
		d.credit += rate / 8 / 1000
		for d.credit >= 1200 {
			d.credit -= 1200
			d.send(1200, false)
		}
		if probeFor > 0 {
			if r, ok := d.e.ProbeWanted(epoch.Add(d.now), probeFor); ok {
				d.pad += float64(r) / 8 / 1000
				for d.pad >= 1200 {
					d.pad -= 1200
					d.send(1200, true)
				}
			} else {
				d.pad = 0
			}
		}
		if d.now%(50*ms1) == 0 {
			d.feedback()
		}
		if nt := d.e.NextTimeout(); !nt.IsZero() && !epoch.Add(d.now).Before(nt) {
			d.e.HandleTimeout(epoch.Add(d.now))
		}
	}
}

func (d *driver) feedback() {
	n := 0
	for n < len(d.inFlight) && d.inFlight[n].arrival <= d.now {
		n++
	}
	if n == 0 {
		return
	}
	d.fb.BaseSeq = d.inFlight[0].seq
	d.fb.Packets = d.fb.Packets[:0]
	for _, f := range d.inFlight[:n] {
		d.fb.Packets = append(d.fb.Packets, Packet{Received: f.received, Arrival: f.arrival + time.Hour})
	}
	d.inFlight = d.inFlight[n:]
	d.e.OnFeedback(epoch.Add(d.now), d.fb)
}

func TestLossThresholds(t *testing.T) {
	cases := []struct {
		name  string
		every int // one packet in every lost; 0: none
		check func(before, after int) bool
		want  string
	}{
		{"no loss: may grow", 0, func(b, a int) bool { return a > b }, "grows"},
		{"5 % loss: holds", 20, func(b, a int) bool { return a == b }, "stays"},
		{"15 % loss: cuts", 7, func(b, a int) bool { return a < b*95/100 }, "falls by more than 5 %"},
	}
	for _, c := range cases {
		cfg := DefaultConfig()
		d := newDriver(cfg, 10e6)
		if c.every > 0 {
			every := c.every
			d.lose = func(n int) bool { return n%every == 0 }
		}
		d.run(2*time.Second, 1e6, 0)
		before := d.e.Estimate()
		d.run(5*time.Second, 1e6, 0)
		after := d.e.Estimate()
		if !c.check(before, after) {
			t.Errorf("%s: estimate %d → %d, want it to %s (stats %+v)", c.name, before, after, c.want, d.e.Stats())
		}
	}
}

// Sustained overuse: we send 2 Mb/s into 1 Mb/s. Once the detector reacts the
// estimate only goes down, to at most the path's rate.
func TestSustainedOveruseMonotone(t *testing.T) {
	cfg := DefaultConfig()
	cfg.StartBitrate = 3_000_000
	d := newDriver(cfg, 1e6)
	prev, reacted := d.e.Estimate(), false
	for i := 0; i < 40; i++ {
		d.run(50*ms1, 2e6, 0)
		est := d.e.Estimate()
		if est < prev {
			reacted = true
		}
		if reacted && est > prev {
			t.Fatalf("step %d: estimate rose %d → %d under sustained overuse", i, prev, est)
		}
		prev = est
	}
	if !reacted || prev > 1_000_000 {
		t.Fatalf("estimate %d after 2 s of 2× overuse (reacted %v)", prev, reacted)
	}
}

// A probe lifts an application-limited estimate when the path has room, and
// does not when it has none.
func TestProbing(t *testing.T) {
	cases := []struct {
		name     string
		capacity float64
		ok       func(est int) bool
		want     string
	}{
		{"room: the estimate reaches what is wanted", 10e6, func(e int) bool { return e >= 2_500_000 }, ">= 2.5 Mb/s"},
		{"no room: the estimate stays near the path", 800e3, func(e int) bool { return e <= 900_000 }, "<= 0.9 Mb/s"},
	}
	for _, c := range cases {
		cfg := DefaultConfig()
		cfg.StartBitrate = 300_000
		d := newDriver(cfg, c.capacity)
		d.run(3*time.Second, 250e3, 2_500_000)
		if est := d.e.Estimate(); !c.ok(est) {
			t.Errorf("%s: estimate %d, want %s (stats %+v)", c.name, est, c.want, d.e.Stats())
		}
		if d.e.Stats().Probes == 0 {
			t.Errorf("%s: no probe", c.name)
		}
	}
}

// No probe while the allocator wants no more than the estimate, or right after
// an overuse.
func TestProbeConditions(t *testing.T) {
	d := newDriver(DefaultConfig(), 10e6)
	d.run(time.Second, 500e3, 0)
	if _, ok := d.e.ProbeWanted(epoch.Add(d.now), d.e.Estimate()); ok {
		t.Error("probe although the estimate covers what is wanted")
	}
	if _, ok := d.e.ProbeWanted(epoch.Add(d.now), 5*d.e.Estimate()); !ok {
		t.Error("no probe although more is wanted")
	}

	// Before any feedback: no probe (nobody would measure it).
	e := New(DefaultConfig())
	e.OnSent(epoch, 0, 1200, false)
	if _, ok := e.ProbeWanted(epoch, 10_000_000); ok {
		t.Error("probe before transport-wide feedback works")
	}

	// Right after overuse: no probe.
	o := newDriver(DefaultConfig(), 1e6)
	o.run(3*time.Second, 2e6, 0)
	if o.e.Stats().Overuses == 0 {
		t.Fatal("no overuse")
	}
	if _, ok := o.e.ProbeWanted(epoch.Add(o.now), 10_000_000); ok {
		t.Error("probe right after overuse")
	}
}

func TestREMB(t *testing.T) {
	cfg := DefaultConfig()
	e := New(cfg)
	e.OnREMB(epoch, 400_000)
	if e.Estimate() != 400_000 || !e.Stats().REMB {
		t.Errorf("REMB alone: estimate %d", e.Estimate())
	}
	e.OnREMB(epoch.Add(time.Second), 1<<40)
	if e.Estimate() != cfg.MaxBitrate {
		t.Errorf("huge REMB: %d", e.Estimate())
	}
	e.OnREMB(epoch.Add(2*time.Second), -5)
	if e.Estimate() != cfg.MinBitrate {
		t.Errorf("negative REMB: %d", e.Estimate())
	}

	// With transport-wide feedback, a fresh REMB caps the estimate.
	d := newDriver(cfg, 10e6)
	d.run(time.Second, 1e6, 0)
	d.e.OnREMB(epoch.Add(d.now), 300_000)
	if d.e.Estimate() != 300_000 || d.e.Stats().REMB {
		t.Errorf("REMB as a cap: %d", d.e.Estimate())
	}
}

func TestFeedbackTimeout(t *testing.T) {
	d := newDriver(DefaultConfig(), 10e6)
	d.run(time.Second, 1e6, 0)
	before := d.e.Estimate()
	// Keep sending, feedback stops.
	for i := 0; i < 1500; i++ {
		d.now += ms1
		d.e.OnSent(epoch.Add(d.now), d.seq, 1200, false)
		d.seq++
		if nt := d.e.NextTimeout(); !nt.IsZero() && !epoch.Add(d.now).Before(nt) {
			d.e.HandleTimeout(epoch.Add(d.now))
		}
	}
	if after := d.e.Estimate(); after > before*85/100 {
		t.Errorf("estimate %d → %d after 1.5 s without feedback, want a 20 %% cut", before, after)
	}
}

func TestNextTimeout(t *testing.T) {
	e := New(DefaultConfig())
	if !e.NextTimeout().IsZero() {
		t.Error("timeout before anything happened")
	}
	e.OnSent(epoch, 1, 1200, false)
	e.OnFeedback(epoch.Add(50*ms1), Feedback{BaseSeq: 1, Packets: []Packet{{Arrival: time.Second, Received: true}}})
	if nt := e.NextTimeout(); !nt.Equal(epoch.Add(50*ms1 + time.Second)) {
		t.Errorf("NextTimeout %v, want feedback timeout", nt.Sub(epoch))
	}
}

// Property: whatever the feedback says, the estimate stays within [min, max]
// and no statistic is NaN.
func TestEstimatorProperties(t *testing.T) {
	cfg := DefaultConfig()
	for seed := int64(0); seed < 50; seed++ {
		rng := rand.New(rand.NewSource(seed))
		e := New(cfg)
		now := time.Duration(0)
		seq := uint16(rng.Intn(65536))
		var fb Feedback
		for i := 0; i < 2000; i++ {
			now += time.Duration(rng.Intn(20)) * ms1
			switch op := rng.Intn(10); {
			case op < 5:
				e.OnSent(epoch.Add(now), seq, rng.Intn(1500), rng.Intn(4) == 0)
				seq++
			case op < 8:
				fb.BaseSeq = seq - uint16(rng.Intn(300))
				fb.Packets = fb.Packets[:0]
				arr := time.Duration(rng.Int63n(int64(time.Hour)))
				for n := rng.Intn(100); n > 0; n-- {
					arr += time.Duration(rng.Intn(40)-10) * ms1
					fb.Packets = append(fb.Packets, Packet{Received: rng.Intn(5) > 0, Arrival: arr})
				}
				e.OnFeedback(epoch.Add(now), fb)
			case op == 8:
				e.OnREMB(epoch.Add(now), rng.Intn(30_000_000)-1_000_000)
			default:
				if r, ok := e.ProbeWanted(epoch.Add(now), rng.Intn(10_000_000)); ok && r < 0 {
					t.Fatalf("seed %d: negative probe rate %d", seed, r)
				}
				e.HandleTimeout(epoch.Add(now))
			}
			est := e.Estimate()
			if est < cfg.MinBitrate || est > cfg.MaxBitrate {
				t.Fatalf("seed %d step %d: estimate %d outside [%d, %d]", seed, i, est, cfg.MinBitrate, cfg.MaxBitrate)
			}
			st := e.Stats()
			for _, f := range []float64{st.Trend, st.Threshold, st.LossFraction} {
				if math.IsNaN(f) || math.IsInf(f, 0) {
					t.Fatalf("seed %d step %d: stats %+v", seed, i, st)
				}
			}
		}
	}
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	bad := []func(*Config){
		func(c *Config) { c.MinBitrate = 0 },
		func(c *Config) { c.StartBitrate = c.MaxBitrate + 1 },
		func(c *Config) { c.Beta = 1 },
		func(c *Config) { c.AppLimitedRatio = 0.5 },
		func(c *Config) { c.LossLow = 0.2 },
		func(c *Config) { c.ProbeGain = 1 },
		func(c *Config) { c.AckedWindow = 2 * time.Second },
		func(c *Config) { c.History = 10 },
	}
	for i, f := range bad {
		c := DefaultConfig()
		f(&c)
		if c.Validate() == nil {
			t.Errorf("bad config %d accepted", i)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("New accepted an invalid config")
		}
	}()
	New(Config{})
}

// OnSent and OnFeedback allocate nothing once running.
func TestNoAllocations(t *testing.T) {
	d := newDriver(DefaultConfig(), 5e6)
	d.run(2*time.Second, 2e6, 0)
	fb := Feedback{Packets: make([]Packet, 0, 64)}
	seq := d.seq
	now := d.now
	sends := testing.AllocsPerRun(1000, func() {
		now += ms1
		d.e.OnSent(epoch.Add(now), seq, 1200, false)
		seq++
	})
	if sends != 0 {
		t.Errorf("OnSent: %v allocations", sends)
	}
	arr := time.Hour
	feeds := testing.AllocsPerRun(200, func() {
		now += 10 * ms1
		fb.BaseSeq = seq
		fb.Packets = fb.Packets[:0]
		for i := 0; i < 10; i++ {
			d.e.OnSent(epoch.Add(now), seq+uint16(i), 1200, false)
		}
		for i := 0; i < 10; i++ {
			arr += ms1
			fb.Packets = append(fb.Packets, Packet{Received: i != 3, Arrival: arr})
		}
		seq += 10
		d.e.OnFeedback(epoch.Add(now+20*ms1), fb)
	})
	if feeds != 0 {
		t.Errorf("OnFeedback: %v allocations", feeds)
	}
}

func BenchmarkOnSent(b *testing.B) {
	e := New(DefaultConfig())
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		e.OnSent(epoch.Add(time.Duration(i)*100*time.Microsecond), uint16(i), 1200, false)
	}
}

// BenchmarkOnFeedback: one 50 ms report of 100 packets (≈ 20 Mb/s).
func BenchmarkOnFeedback(b *testing.B) {
	e := New(DefaultConfig())
	fb := Feedback{Packets: make([]Packet, 100)}
	seq := uint16(0)
	now := time.Duration(0)
	arr := time.Hour
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		fb.BaseSeq = seq
		for k := range fb.Packets {
			now += 500 * time.Microsecond
			e.OnSent(epoch.Add(now), seq, 1200, false)
			seq++
			arr += 500 * time.Microsecond
			fb.Packets[k] = Packet{Received: true, Arrival: arr}
		}
		e.OnFeedback(epoch.Add(now+20*ms1), fb)
	}
}

// Departed moves a packet's send time to when it left, never earlier than
// its stamp, and leaves alone a packet already reported or no longer held.
func TestDeparted(t *testing.T) {
	e := New(DefaultConfig())
	e.OnSent(epoch, 10, 1200, false)
	e.OnSent(epoch, 11, 1200, false)
	e.OnSent(epoch, 12, 1200, false)
	e.Departed(epoch.Add(3*ms1), 10)
	e.Departed(epoch.Add(-ms1), 11) // before its stamp: kept
	e.hist.get(12).reported = true
	e.Departed(epoch.Add(3*ms1), 12)
	e.Departed(epoch.Add(3*ms1), 999) // never sent: nothing
	for _, c := range []struct {
		seq  uint16
		want time.Duration
	}{{10, 3 * ms1}, {11, 0}, {12, 0}} {
		if got := e.hist.get(c.seq).at - e.since(epoch); got != c.want {
			t.Errorf("packet %d sent at %v, want %v", c.seq, got, c.want)
		}
	}
	if e.hist.get(999) != nil {
		t.Error("Departed made an entry for a packet never sent")
	}
}

// A queued packet carries the last send time known until Departed gives it
// its own; its bytes count as media sent.
func TestOnQueuedTakesItsTimeFromDeparted(t *testing.T) {
	e := New(DefaultConfig())
	e.OnSent(epoch, 10, 1200, false)
	e.Departed(epoch.Add(5*ms1), 10)
	e.OnQueued(11, 1200, false)
	if got := e.hist.get(11).at - e.since(epoch); got != 5*ms1 {
		t.Errorf("queued packet at %v, want the last departure's 5ms", got)
	}
	e.Departed(epoch.Add(9*ms1), 11)
	if got := e.hist.get(11).at - e.since(epoch); got != 9*ms1 {
		t.Errorf("departed packet at %v, want 9ms", got)
	}
	if got := e.media.rateAt(e.since(epoch.Add(50*ms1)), 50*ms1); got != 2*1200*8/0.05 {
		t.Errorf("media rate %v b/s after two packets, want both counted", got)
	}
}

// A decrease leaves as known ground the rate it came down from, unless it
// more than halved the estimate: then the path's rate the cut was taken from.
func TestKnownGround(t *testing.T) {
	for _, c := range []struct {
		name      string
		from, to  float64
		competing bool
		want      float64
	}{
		{"a steady capacity's cut", 1_100_000, 850_000, false, 1_100_000},
		{"half exactly", 1_000_000, 500_000, false, 1_000_000},
		{"a cap's onset", 904_000, 211_000, false, 211_000 / 0.85},
		{"competitive mode keeps the estimate", 904_000, 211_000, true, 904_000},
	} {
		if got := knownGround(c.from, c.to, 0.85, c.competing); math.Abs(got-c.want) > 1e-6 {
			t.Errorf("%s: %.0f → %.0f: known ground %.0f, want %.0f", c.name, c.from, c.to, got, c.want)
		}
	}
}
