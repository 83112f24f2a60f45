package bwe

import (
	"math"
	"testing"
	"time"
)

// competeTrace feeds the detector one feedback every 50 ms for d: the queue
// (one-way delay above a 40 ms base) and our media rate at each time, with
// decreases at the listed times. It reports when the detector became ready
// (-1: never) and whether competitive mode was on at the end, entering it
// when ready as the estimator does.
func competeTrace(d time.Duration, queue func(time.Duration) time.Duration, send func(time.Duration) float64, decreases ...time.Duration) (time.Duration, bool) {
	c := newCompeteDetector()
	readyAt := time.Duration(-1)
	for t := time.Duration(0); t <= d; t += 50 * ms1 {
		for _, x := range decreases {
			if x > t-50*ms1 && x <= t {
				c.decreased()
			}
		}
		c.observe(t, 40*ms1+queue(t), send(t))
		if c.ready(t, send(t)) {
			if readyAt < 0 {
				readyAt = t
			}
			c.enter(t)
		}
	}
	return readyAt, c.on
}

func TestCompeteDetector(t *testing.T) {
	sec := time.Second
	// A download fills the queue from 5 s and keeps it between 50 and 90 ms
	// (CUBIC's sawtooth); we decrease at 6 s and 7 s and our rate falls from
	// 1.5 Mb/s to 500 kb/s: competitive mode from 8 s (3 s of queue).
	sawtooth := func(t time.Duration) time.Duration {
		if t < 5*sec {
			return 2 * ms1
		}
		return 50*ms1 + time.Duration(int64(t/ms1)%4000)*ms1/100
	}
	fall := func(t time.Duration) float64 {
		if t < 6500*ms1 {
			return 1.5e6
		}
		return 0.5e6
	}
	if at, on := competeTrace(20*sec, sawtooth, fall, 6*sec, 7*sec); !on || at != 8*sec {
		t.Errorf("competitor: ready at %v, on %v; want from 8s, on", at, on)
	}
	// Our own overshoot: the queue rises at 5 s, we decrease at 5.5 s and it
	// drains by 6.5 s.
	own := func(t time.Duration) time.Duration {
		if t >= 5*sec && t < 6500*ms1 {
			return 80 * ms1
		}
		return 3 * ms1
	}
	if at, on := competeTrace(20*sec, own, fall, 5500*ms1, 6*sec); at >= 0 || on {
		t.Errorf("own overshoot: ready at %v, on %v; want never", at, on)
	}
	// A queue that stays while our rate cannot fall (the lowest layer fills
	// the link): decreases, but no competitor.
	flat := func(time.Duration) float64 { return 150e3 }
	if at, on := competeTrace(20*sec, sawtooth, flat, 6*sec, 7*sec, 9*sec); at >= 0 || on {
		t.Errorf("floor: ready at %v, on %v; want never", at, on)
	}
	// A 128 kb/s cap: our rate falls from 2.5 Mb/s to the lowest layer's
	// 100 kb/s, which alone keeps the queue full: never (under competeMinSend).
	capped := func(t time.Duration) float64 {
		if t < 6500*ms1 {
			return 2.5e6
		}
		return 100e3
	}
	if at, on := competeTrace(20*sec, sawtooth, capped, 6*sec, 7*sec, 9*sec); at >= 0 || on {
		t.Errorf("128 kb/s cap: ready at %v, on %v; want never", at, on)
	}
	// No decrease of ours during the queue: not proven.
	if at, _ := competeTrace(20*sec, sawtooth, fall); at >= 0 {
		t.Errorf("no decreases: ready at %v, want never", at)
	}
	// The download stops at 15 s: the queue drains and delay mode is back.
	stops := func(t time.Duration) time.Duration {
		if t >= 15*sec {
			return 2 * ms1
		}
		return sawtooth(t)
	}
	if at, on := competeTrace(20*sec, stops, fall, 6*sec, 7*sec); at != 8*sec || on {
		t.Errorf("download stops: ready at %v, on at the end %v; want ready at 8s, off at the end", at, on)
	}
}

// clearedAt feeds the detector as competeTrace does (no decreases) and reports
// when it first said the flows that filled the queue left (-1: never).
func clearedAt(d time.Duration, queue func(time.Duration) time.Duration, send func(time.Duration) float64) time.Duration {
	return clearedAtEntering(d, -1, queue, send)
}

// clearedAtEntering is clearedAt with competitive mode entered at enter (-1:
// never), as the estimator does once the detector is ready.
func clearedAtEntering(d, enter time.Duration, queue func(time.Duration) time.Duration, send func(time.Duration) float64) time.Duration {
	c := newCompeteDetector()
	for t := time.Duration(0); t <= d; t += 50 * ms1 {
		if t == enter {
			c.enter(t)
		}
		c.observe(t, 40*ms1+queue(t), send(t))
		if c.cleared {
			return t
		}
	}
	return -1
}

// Ten downloads keep the queue at 100 ms from 5 s to 25 s while we send the
// lowest layers (300 kb/s): when they stop, the queue is gone within a round
// trip and the detector says so (the estimator then forgets the probes'
// back-off). A queue that drains because our rate fell (a lower layer), or
// one that comes and goes with our own traffic, or stood too briefly, does not.
func TestCompeteDetectorCleared(t *testing.T) {
	sec := time.Second
	steady := func(time.Duration) float64 { return 300e3 }
	downloads := func(t time.Duration) time.Duration {
		if t >= 5*sec && t < 25*sec {
			return 100 * ms1
		}
		return 2 * ms1
	}
	if at := clearedAt(30*sec, downloads, steady); at != 25*sec {
		t.Errorf("downloads stop at 25 s: cleared at %v, want 25s", at)
	}
	falls := func(t time.Duration) float64 {
		if t < 24700*ms1 {
			return 2.5e6
		}
		return 300e3
	}
	if at := clearedAt(30*sec, downloads, falls); at >= 0 {
		t.Errorf("the queue drains as our rate falls: cleared at %v, want never", at)
	}
	// Our own lowest layers keep a slow link's queue between 25 and 50 ms,
	// now and then below 20 ms, draining slowly.
	ours := func(t time.Duration) time.Duration {
		if t < 5*sec {
			return 2 * ms1
		}
		q := 50*ms1 - time.Duration(int64(t/ms1)%2000)*ms1/50 // 50 ms down to 10 ms every 2 s
		return q
	}
	if at := clearedAt(30*sec, ours, steady); at >= 0 {
		t.Errorf("our own queue comes and goes: cleared at %v, want never", at)
	}
	brief := func(t time.Duration) time.Duration {
		if t >= 5*sec && t < 7*sec {
			return 100 * ms1
		}
		return 2 * ms1
	}
	if at := clearedAt(30*sec, brief, steady); at >= 0 {
		t.Errorf("a 2 s queue: cleared at %v, want never", at)
	}
	// In competitive mode (entered at 9 s) our lowest layers' rate wavers
	// with their frames, 150–300 kb/s over the rate window: the queue that
	// stood there was the downloads', and its drain clears whatever our rate
	// did just then. Checked in delay mode, that wavering missed it.
	wavering := func(t time.Duration) float64 {
		if int64(t/(500*ms1))%2 == 1 {
			return 300e3
		}
		return 150e3 // from 25 s to 25.5 s, as the queue drains
	}
	if at := clearedAtEntering(30*sec, 9*sec, downloads, wavering); at != 25*sec {
		t.Errorf("downloads stop at 25 s, competitive mode on, our rate wavering: cleared at %v, want 25s", at)
	}
}

// The estimator in competitive mode ignores the delay signals and holds its
// share on loss: loss between LossLow and LossHigh while it sends well below
// the estimate does not cut it; near the estimate it cuts by β, but not below
// the media the receiver acknowledged; loss above LossHigh cuts below that.
func TestCompetitiveModeHoldsOnLoss(t *testing.T) {
	run := func(ackedBps float64, losses ...float64) float64 {
		e := New(DefaultConfig())
		e.compete.on = true
		e.target, e.estimate = 2e6, 2_000_000
		e.rc.estimate = 2e6
		for i := 0; i < 20; i++ {
			e.ackedApp.add(time.Duration(i)*25*ms1, int(ackedBps/8/40))
		}
		for i, f := range losses {
			e.onLoss(500*ms1+time.Duration(i)*time.Second, f)
		}
		if e.usage() != Normal {
			t.Errorf("usage %v in competitive mode, want normal", e.usage())
		}
		return e.target
	}
	if got := run(1e6, 0.05); got != 2e6 {
		t.Errorf("5 %% loss sending 1 Mb/s of a 2 Mb/s estimate: target %.0f, want held at 2 Mb/s", got)
	}
	if got := run(1.9e6, 0.05); got < 1.89e6 || got > 1.91e6 {
		t.Errorf("5 %% loss sending 1.9 Mb/s: target %.0f, want cut by β but not below the 1.9 Mb/s acknowledged", got)
	}
	if got := run(1.9e6, 0.05, 0.05, 0.05); got < 1.89e6 || got > 1.91e6 {
		t.Errorf("three 5 %% loss windows sending 1.9 Mb/s: target %.0f, want held at the 1.9 Mb/s acknowledged", got)
	}
	if got := run(1.9e6, 0.20); got > 1.81e6 || got < 1.5e6 {
		t.Errorf("one 20 %% loss window: target %.0f, want the loss cut, 1 − 0.2/2 of 2 Mb/s", got)
	}
	// Above LossHigh window after window many flows share the queue: the
	// cut goes to what a TCP flow takes at that loss and round trip, with
	// no floor at what the path delivers of ours.
	want := tcpFriendlyRate(0.20, defaultRTT)
	if got := run(1.9e6, 0.20, 0.20); got > want*1.01 || got < want*0.99 {
		t.Errorf("two 20 %% loss windows: target %.0f, want the TCP-friendly %.0f", got, want)
	}
	if got := run(1.9e6, 0.6, 0.6, 0.6, 0.6); got != tcpFriendlyFloor {
		t.Errorf("four 60 %% loss windows: target %.0f, want the floor %d (the lowest layer and the audio)", got, tcpFriendlyFloor)
	}
	if got := run(1.9e6, 0.20, 0.05, 0.20); got < 1.3e6 {
		t.Errorf("20 %%, 5 %%, 20 %% loss windows: target %.0f, want two loss cuts, not the TCP-friendly rate", got)
	}
	if want > 600_000 || want < 100_000 {
		t.Errorf("TCP-friendly rate at 20 %% loss and %v: %.0f, want the few hundred kb/s a TCP flow gets", defaultRTT, want)
	}
}

// In competitive mode what the path delivers of ours is no floor over the
// estimate: it may deliver it at the others' loss.
func TestCompetitiveDeliveredAtMostTheEstimate(t *testing.T) {
	e := New(DefaultConfig())
	for i := 0; i < 20; i++ {
		e.ackedApp.add(time.Duration(i)*25*ms1, 1_000_000/8/40)
	}
	e.estimate = 400_000
	if got := e.Delivered(); got < 900_000 {
		t.Fatalf("delay mode: delivered %d, want the 1 Mb/s acknowledged", got)
	}
	e.compete.on = true
	if got := e.Delivered(); got != 400_000 {
		t.Errorf("competitive mode: delivered %d, want at most the 400 kb/s estimate", got)
	}
}

// In competitive mode the estimate grows past what we send only towards what
// the held-back layers would take (SetWanted), never without bound: with one
// CUBIC flow and our loss low it climbed 8 %/s to 20 Mb/s on a 4 Mb/s link,
// then took 10 s of heavy loss to come down when ten flows joined, the stage
// frozen on its top layer all that time (browser test, 26 Nov).
func TestCompetitiveGrowthStopsAtWhatIsWanted(t *testing.T) {
	run := func(wanted int) float64 {
		d := newDriver(DefaultConfig(), 10e6)
		d.run(5*time.Second, 1.5e6, 0) // the base one-way delay
		d.others = 60 * ms1            // a queue others keep full
		d.run(time.Second, 1.5e6, 0)
		d.e.compete.enter(d.now)
		peak := 0.0
		for i := 0; i < 300; i++ { // 30 s
			d.e.SetWanted(wanted)
			d.run(100*ms1, 1.5e6, 0)
			if !d.e.compete.on {
				t.Fatalf("wanted %d: left competitive mode at %v with the others' queue standing", wanted, d.now)
			}
			peak = math.Max(peak, float64(d.e.Estimate()))
		}
		return peak
	}
	if got := run(0); got > 1.2*1.5e6*1.1 {
		t.Errorf("nothing held back, sending 1.5 Mb/s: the estimate reached %.0f, want at most about 1.2 × what we send", got)
	}
	if got := run(2_200_000); got < 2.2e6 || got > 1.2*2.2e6*1.1 {
		t.Errorf("2.2 Mb/s wanted, sending 1.5 Mb/s: the estimate reached %.0f, want past 2.2 Mb/s (to take the layer back) and at most about 1.2 × it", got)
	}
}
