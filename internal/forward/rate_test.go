package forward

import (
	"testing"
	"time"
)

// feedRate adds bytes every 10 ms from start for d (100 bytes per 10 ms: 80 kb/s).
func feedRate(r *rateMeter, start time.Time, d time.Duration) {
	for t := time.Duration(0); t < d; t += 10 * time.Millisecond {
		r.add(start.Add(t), 100)
	}
}

func TestRateMeterSteadyStream(t *testing.T) {
	var r rateMeter
	start := time.Unix(1_000_000, 0)
	feedRate(&r, start, 5*time.Second)
	now := start.Add(5 * time.Second)
	if got := r.bitrate(now); got != 80_000 {
		t.Errorf("bitrate %d, want 80000", got)
	}
	if !r.settled(now) {
		t.Error("a stream flowing for 5 s is not settled")
	}
}

// A stream that began half a second ago is averaged over what it filled, not
// over the whole two seconds, and is not settled yet.
func TestRateMeterYoungStreamIsNotUnderstated(t *testing.T) {
	var r rateMeter
	start := time.Unix(1_000_000, 0)
	feedRate(&r, start, 500*time.Millisecond)
	now := start.Add(500 * time.Millisecond)
	if got := r.bitrate(now); got != 80_000 {
		t.Errorf("bitrate %d after 0.5 s, want 80000", got)
	}
	if r.settled(now) {
		t.Error("settled after 0.5 s")
	}
	if got := r.bitrate(start.Add(50 * time.Millisecond)); got != 0 {
		t.Errorf("bitrate %d before the first bucket is full, want 0 (unknown)", got)
	}
}

// After a whole window of silence a stream starts a new run: its rate is that
// of the new run, and it settles again only after a full window.
func TestRateMeterResumedStream(t *testing.T) {
	var r rateMeter
	start := time.Unix(1_000_000, 0)
	feedRate(&r, start, 5*time.Second)
	stopped := start.Add(5 * time.Second)
	if r.settled(stopped.Add(time.Second)) {
		t.Error("settled 1 s after the stream stopped: its window is half empty")
	}
	if got := r.bitrate(stopped.Add(3 * time.Second)); got != 0 {
		t.Errorf("bitrate %d 3 s after the stream stopped, want 0", got)
	}
	if r.settled(stopped.Add(3 * time.Second)) {
		t.Error("a stopped stream is settled")
	}
	resumed := stopped.Add(10 * time.Second)
	feedRate(&r, resumed, time.Second)
	now := resumed.Add(time.Second)
	if got := r.bitrate(now); got != 80_000 {
		t.Errorf("bitrate %d 1 s after resuming, want 80000", got)
	}
	if r.settled(now) {
		t.Error("settled 1 s after resuming")
	}
	feedRate(&r, now, 2*time.Second)
	if !r.settled(now.Add(2 * time.Second)) {
		t.Error("not settled 3 s after resuming")
	}
}

// An encoding switched off (nobody shows it large) and back on is priced at its
// last full-window rates until its new run fills a window, not at its stopped
// or opening moments.
func TestTemporalBitratesRememberedAcrossAPause(t *testing.T) {
	var u UpTrack
	start := time.Unix(1_000_000, 0)
	feedRate(&u.rate, start, 5*time.Second)
	steady := u.TemporalBitrates(start.Add(5 * time.Second))
	if steady[2] != 80_000 {
		t.Fatalf("steady rates %v, want 80000 in total", steady)
	}
	for _, off := range []time.Duration{5500 * time.Millisecond, 6 * time.Second, 8 * time.Second} {
		if got := u.TemporalBitrates(start.Add(off)); got != steady {
			t.Errorf("stopped for %v: %v, want the last settled %v", off-5*time.Second, got, steady)
		}
	}
	resumed := start.Add(20 * time.Second)
	u.rate.add(resumed, 40) // the first packet of the new run
	if got := u.TemporalBitrates(resumed.Add(150 * time.Millisecond)); got != steady {
		t.Errorf("just resumed: %v, want the last settled %v", got, steady)
	}
	// Once the new run fills a window, it is what counts, lower or not.
	for d := time.Duration(0); d < 3*time.Second; d += 10 * time.Millisecond {
		u.rate.add(resumed.Add(d), 50)
	}
	if got := u.TemporalBitrates(resumed.Add(3 * time.Second)); got[2] != 40_000 {
		t.Errorf("settled again at 40 kb/s: %v", got)
	}
}

// Right after a receiver starts getting an encoding, its temporal layers hold
// a window's first buckets, the switch's keyframe among them: the encoding's
// total rate is split in the usual proportions until they fill a window.
func TestTemporalBitratesIgnoreAYoungSplit(t *testing.T) {
	var u UpTrack
	start := time.Unix(1_000_000, 0)
	feedRate(&u.rate, start, 5*time.Second)
	switched := start.Add(4800 * time.Millisecond)
	u.temporalRate[0].add(switched, 20_000) // the keyframe
	feedRate(&u.temporalRate[0], switched, 200*time.Millisecond)
	now := start.Add(5 * time.Second)
	if got, want := u.TemporalBitrates(now), [3]int{32_000, 48_000, 80_000}; got != want {
		t.Errorf("0.2 s after the switch: %v, want the usual split %v", got, want)
	}
	feedRate(&u.rate, now, 3*time.Second)
	feedRate(&u.temporalRate[0], now, 3*time.Second)
	if got := u.TemporalBitrates(now.Add(3 * time.Second)); got != [3]int{80_000, 80_000, 80_000} {
		t.Errorf("after a full window: %v, want all of it measured in layer 0", got)
	}
}
