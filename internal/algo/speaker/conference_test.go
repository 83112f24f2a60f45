package speaker

import (
	"flag"
	"fmt"
	"math/rand"
	"slices"
	"testing"
	"time"
)

// conferenceResult summarises a conference trace.
type conferenceResult struct {
	turns, detected, missed, falseSwitches int
	latencies                              []time.Duration
}

func (c conferenceResult) String() string {
	if len(c.latencies) == 0 {
		return fmt.Sprintf("turns=%d detected=0", c.turns)
	}
	over := 0
	for _, l := range c.latencies {
		if l > time.Second {
			over++
		}
	}
	return fmt.Sprintf("turns=%d detected=%d missed=%d false=%d latency median=%v p95=%v p99=%v max=%v, %.1f%% over 1 s",
		c.turns, c.detected, c.missed, c.falseSwitches,
		percentile(c.latencies, 0.5), percentile(c.latencies, 0.95), percentile(c.latencies, 0.99),
		slices.Max(c.latencies), 100*float64(over)/float64(len(c.latencies)))
}

// conference reproduces the thesis testbed (L1088): n participants, one of
// them speaks at a time and the speaker changes every turn to another one
// chosen at random; the others send background noise, digital silence or
// nothing (DTX). Voices differ in loudness and noise.
func conference(seed int64, n int, turn, total time.Duration) conferenceResult {
	r := rand.New(rand.NewSource(seed))
	ids := make([]ID, n)
	tracks := make([]*track, n)
	for i := range n {
		ids[i] = ID(fmt.Sprintf("p%02d", i))
		v := voice{speech: 15 + r.Intn(21), noise: 60 + r.Intn(41)}
		switch i % 3 {
		case 1:
			v.dtx = true
		case 2:
			v.noise = 127
		}
		tracks[i] = newTrack(r, v)
	}
	turns := int(total / turn)
	speakers := make([]int, turns)
	for k := range turns {
		s := r.Intn(n)
		for k > 0 && s == speakers[k-1] {
			s = r.Intn(n)
		}
		speakers[k] = s
		tr := tracks[s]
		tr.until(slots(time.Duration(k) * turn))
		tr.speech(turn)
	}
	for _, tr := range tracks {
		tr.until(slots(total))
	}

	events := simulate(New(DefaultConfig()), r, ids, tracks)

	res := conferenceResult{turns: turns}
	for k, s := range speakers {
		start, end := time.Duration(k)*turn, time.Duration(k+1)*turn
		if t, ok := firstSwitchTo(events, ids[s], start); ok && t < end {
			res.detected++
			res.latencies = append(res.latencies, t-start)
		} else if dominantAt(events, start) != ids[s] {
			res.missed++
		}
		for _, e := range between(events, start, end) {
			if e.Dominant != ids[s] {
				res.falseSwitches++
			}
		}
	}
	return res
}

var conferenceSeeds = flag.Int("seeds", 1, "number of seeds TestConference30 pools (-args -seeds=20)")

// TestConference30 is the thesis testbed at K = 30: the speaker changes every
// 4 s for 10 minutes. Switch latency is measured from the first syllable of
// the new speaker to the decision that makes it dominant; a false switch is
// one to anybody but the current speaker.
func TestConference30(t *testing.T) {
	t.Parallel()
	var all conferenceResult
	for seed := range int64(*conferenceSeeds) {
		res := conference(seed+1, 30, 4*time.Second, 10*time.Minute)
		t.Logf("seed %d: %v", seed+1, res)
		all.turns += res.turns
		all.detected += res.detected
		all.missed += res.missed
		all.falseSwitches += res.falseSwitches
		all.latencies = append(all.latencies, res.latencies...)
	}
	if *conferenceSeeds > 1 {
		t.Logf("all %d seeds: %v", *conferenceSeeds, all)
	}

	if all.missed != 0 || all.detected != all.turns {
		t.Errorf("detected %d of %d turns, missed %d", all.detected, all.turns, all.missed)
	}
	if all.falseSwitches != 0 {
		t.Errorf("false switches = %d, want 0", all.falseSwitches)
	}
	if len(all.latencies) == 0 {
		t.Fatal("no switch measured")
	}
	if m := percentile(all.latencies, 0.5); m > time.Second {
		t.Errorf("median switch latency %v > 1s", m)
	}
	if p := percentile(all.latencies, 0.95); p > 1200*time.Millisecond {
		t.Errorf("p95 switch latency %v > 1.2s", p)
	}
}
