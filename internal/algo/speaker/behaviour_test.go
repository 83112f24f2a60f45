package speaker

import (
	"math/rand"
	"slices"
	"testing"
	"time"
)

// Trace tests of the required behaviour (system spec section 4). Each runs
// over several seeds, since one lucky trace proves little.

const seeds = 20

// Voices. While silent, dtx sends comfort noise every 400 ms, muted sends
// digital silence, off sends nothing.
var (
	loud  = voice{speech: 20, noise: 70}
	quiet = voice{speech: 40, noise: 90} // 20 dB quieter voice and background
	dtx   = voice{speech: 25, noise: 75, dtx: true}
	muted = voice{speech: 25, noise: 127}
	off   = voice{speech: 25, noise: 75, off: true}
)

// scene builds the tracks of a few participants named a, b, c, ...
type scene struct {
	r      *rand.Rand
	ids    []ID
	tracks []*track
}

func newScene(seed int64, voices ...voice) *scene {
	s := &scene{r: rand.New(rand.NewSource(seed))}
	for i, v := range voices {
		s.ids = append(s.ids, ID(rune('a'+i)))
		s.tracks = append(s.tracks, newTrack(s.r, v))
	}
	return s
}

func (s *scene) run() []timedEvent { return s.runWith(New(DefaultConfig())) }

func (s *scene) runWith(d *Detector) []timedEvent {
	end := 0
	for _, tr := range s.tracks {
		end = max(end, tr.len())
	}
	for _, tr := range s.tracks {
		tr.until(end)
	}
	return simulate(d, s.r, s.ids, s.tracks)
}

// Requirement 1: transient noise switches nobody, neither while someone
// speaks nor while nobody is dominant yet.
func TestNoSwitchOnTransientNoise(t *testing.T) {
	t.Parallel()
	for seed := range int64(seeds) {
		s := newScene(seed, loud, loud, off, muted)
		a := s.tracks[0]
		a.silence(2 * time.Second)
		a.speech(20 * time.Second)
		for _, tr := range s.tracks[1:] {
			for tr.len() < a.len()-slots(time.Second) {
				tr.silence(time.Duration(300+s.r.Intn(700)) * time.Millisecond)
				tr.click()
			}
		}
		events := s.run()
		if len(events) != 1 || events[0].Dominant != "a" {
			t.Errorf("seed %d: events %v, want only a becoming dominant", seed, events)
		}
	}
}

// wordsDuring has each listener say a word inside some of speaker's
// sentences, at least 300 ms after the sentence starts and 300 ms before it
// ends, and at most one word every 2 s per listener.
func wordsDuring(s *scene, speaker *track, listeners []*track) int {
	words := 0
	for i, l := range listeners {
		for _, sen := range speaker.sentences {
			from, to := max(sen[0]+slots(300*time.Millisecond), l.len()+slots(2*time.Second)), sen[1]-slots(700*time.Millisecond)
			if to <= from || s.r.Intn(len(listeners)) != i {
				continue
			}
			l.until(from + s.r.Intn(to-from))
			l.word()
			words++
		}
	}
	return words
}

// A listener's "yes" or "right" over the speaker's sentence does not switch.
func TestNoSwitchOnInterjection(t *testing.T) {
	t.Parallel()
	total := 0
	for seed := range int64(seeds) {
		s := newScene(seed, loud, loud, quiet, off)
		a := s.tracks[0]
		a.speech(60 * time.Second)
		total += wordsDuring(s, a, s.tracks[1:])
		events := s.run()
		if len(events) != 1 || events[0].Dominant != "a" {
			t.Errorf("seed %d: events %v, want only a becoming dominant", seed, events)
		}
	}
	t.Logf("%d interjections over %d speeches of 60 s", total, seeds)
	if total < 10*seeds {
		t.Fatalf("only %d interjections: the trace does not test much", total)
	}
}

// A word said in the speaker's pause between sentences is the algorithm's
// known weakness: the speaker's activity has faded and the word looks like a
// new speech burst, so it may take over until the speaker resumes. This test
// measures how often, and asserts that the speaker gets the floor back.
func TestInterjectionInPause(t *testing.T) {
	t.Parallel()
	words, switched := 0, 0
	for seed := range int64(seeds) {
		s := newScene(seed, loud, loud)
		a, b := s.tracks[0], s.tracks[1]
		a.speech(60 * time.Second)
		var starts []int
		for k, sen := range a.sentences[:len(a.sentences)-1] {
			if k%2 == 1 {
				continue
			}
			// The word starts 0-200 ms into the pause after the sentence.
			b.until(sen[1] + s.r.Intn(slots(200*time.Millisecond)+1))
			starts = append(starts, b.len())
			b.word()
		}
		events := s.run()
		for k, w := range starts {
			words++
			next := a.sentences[2*k+1][0]
			if len(between(events, slotTime(w), slotTime(next))) > 0 {
				switched++
			}
			if dominantAt(events, slotTime(next)+1200*time.Millisecond) != "a" {
				t.Errorf("seed %d: a not dominant 1.2 s after resuming at %v; events %v", seed, slotTime(next), events)
			}
		}
	}
	t.Logf("a word in the speaker's pause switched %d of %d times (%.0f%%)", switched, words, 100*float64(switched)/float64(words))
}

var allVoices = []struct {
	name string
	v    voice
}{{"loud", loud}, {"quiet", quiet}, {"dtx", dtx}, {"muted", muted}, {"off", off}}

// Requirement 2: the dominant speaker stays through a 2-3 s silence between
// speakers, whatever the others send while silent; the switch comes with the
// next speaker's first burst.
func TestNoSwitchDuringSilence(t *testing.T) {
	t.Parallel()
	for seed := range int64(seeds) {
		for _, next := range allVoices {
			s := newScene(seed, loud, next.v, dtx, muted, off)
			a, b := s.tracks[0], s.tracks[1]
			a.speech(4 * time.Second)
			aEnd := a.len()
			pause := time.Duration(2000+s.r.Intn(1000)) * time.Millisecond
			b.until(aEnd + slots(pause))
			bStart := b.len()
			b.speech(4 * time.Second)
			bEnd := b.len()
			events := s.run()

			if got := between(events, slotTime(aEnd), slotTime(bStart)); len(got) != 0 || dominantAt(events, slotTime(bStart)) != "a" {
				t.Errorf("seed %d, next %s: a not kept through a %v pause; events %v", seed, next.name, pause, events)
			}
			if got := between(events, slotTime(bStart), slotTime(bEnd)); len(got) != 1 || got[0].Dominant != "b" {
				t.Errorf("seed %d, next %s: want one switch, to b, after b starts; events %v", seed, next.name, events)
			}
		}
	}
}

// Requirement 3: a new sustained speaker takes over within about 1 s of its
// first syllable, whether the previous one stopped just then, 200 ms earlier
// or long ago. The published parameters do not make that a hard bound: the
// previous speaker's long-term activity takes up to 1 s to fade, and a new
// speaker whose noise floor is still unknown (muted, off) ramps up more
// slowly, so a few handovers take longer.
func TestSwitchWithinOneSecond(t *testing.T) {
	t.Parallel()
	var lat []time.Duration
	for seed := range int64(8) { // × 75 voice pairs and pauses
		for _, prev := range allVoices {
			for _, next := range allVoices {
				for _, pause := range []time.Duration{0, 200 * time.Millisecond, 2 * time.Second} {
					s := newScene(seed, prev.v, next.v, quiet, dtx)
					a, b := s.tracks[0], s.tracks[1]
					a.silence(time.Second)
					a.speech(5 * time.Second)
					b.until(a.len() + slots(pause))
					bStart := b.len()
					b.speech(4 * time.Second)
					events := s.run()

					at, ok := firstSwitchTo(events, "b", slotTime(bStart))
					if !ok || at-slotTime(bStart) > 2*time.Second {
						t.Errorf("seed %d, %s to %s after %v: b not dominant within 2 s; events %v", seed, prev.name, next.name, pause, events)
						continue
					}
					lat = append(lat, at-slotTime(bStart))
				}
			}
		}
	}
	within := 0
	for _, l := range lat {
		if l <= time.Second {
			within++
		}
	}
	frac := float64(within) / float64(len(lat))
	t.Logf("%d handovers: median %v, p90 %v, p95 %v, max %v, %.1f%% within 1 s",
		len(lat), percentile(lat, 0.5), percentile(lat, 0.9), percentile(lat, 0.95), slices.Max(lat), 100*frac)
	if m := percentile(lat, 0.5); m > 800*time.Millisecond {
		t.Errorf("median latency %v > 800ms", m)
	}
	if frac < 0.9 {
		t.Errorf("only %.1f%% of handovers within 1 s, want at least 90%%", 100*frac)
	}
}

// Requirement 4: when two talk at once, whoever started first keeps the
// floor. b talks over the last 1-2.5 s of a sentence of a; a stays dominant
// until it stops, then b takes over (how fast depends on b's own pauses).
func TestOverlapFirstStays(t *testing.T) {
	t.Parallel()
	for seed := range int64(seeds) {
		for _, v := range allVoices {
			s := newScene(seed, loud, v.v, dtx)
			a, b := s.tracks[0], s.tracks[1]
			a.speech(4 * time.Second)
			a.quiet(20)
			a.sentence(4 * time.Second)
			overlap := time.Duration(1000+s.r.Intn(1500)) * time.Millisecond
			b.until(a.len() - slots(overlap))
			bStart, aEnd := b.len(), a.len()
			b.speech(overlap + 4*time.Second)
			bEnd := b.len()
			events := s.run()

			if got := between(events, slotTime(bStart), slotTime(aEnd)); len(got) != 0 {
				t.Errorf("seed %d, %s: switch during %v of overlap: %v", seed, v.name, overlap, got)
			}
			if at, ok := firstSwitchTo(events, "b", slotTime(aEnd)); !ok || at > slotTime(bEnd) {
				t.Errorf("seed %d, %s: b did not take over once a stopped; events %v", seed, v.name, events)
			}
		}
	}
}

// Requirement 4, from silence: a, b and c start within 500 ms of each other
// while nobody is dominant; a, the first, becomes dominant and stays while
// all three talk.
func TestOverlapFirstBecomes(t *testing.T) {
	t.Parallel()
	for seed := range int64(seeds) {
		s := newScene(seed, loud, loud, quiet, off)
		a, b, c := s.tracks[0], s.tracks[1], s.tracks[2]
		a.silence(time.Second)
		a.sentence(3 * time.Second)
		b.silence(time.Duration(1200+s.r.Intn(300)) * time.Millisecond)
		b.sentence(3 * time.Second)
		c.silence(time.Duration(1200+s.r.Intn(300)) * time.Millisecond)
		c.sentence(3 * time.Second)
		aEnd := a.len()
		events := s.run()

		if len(events) == 0 || events[0].Dominant != "a" || events[0].t > 1500*time.Millisecond {
			t.Errorf("seed %d: a not dominant within 500 ms of starting: %v", seed, events)
			continue
		}
		if got := between(events, events[0].t+1, slotTime(aEnd)); len(got) != 0 {
			t.Errorf("seed %d: switch while a, b and c all talk: %v", seed, got)
		}
	}
}

// Requirement 5: loudness does not matter. A loud and a 20 dB quieter speaker
// (with a 20 dB quieter background) alternate 4 s turns; both take every turn,
// with median latencies within one decision interval of each other.
func TestLoudnessIndependent(t *testing.T) {
	t.Parallel()
	var toLoud, toQuiet []time.Duration
	for seed := range int64(seeds) {
		s := newScene(seed, loud, quiet)
		for turn := range 10 {
			tr := s.tracks[turn%2]
			tr.until(slots(time.Duration(turn) * 4 * time.Second))
			tr.speech(4 * time.Second)
		}
		events := s.run()
		for turn := range 10 {
			start := time.Duration(turn) * 4 * time.Second
			id := s.ids[turn%2]
			at, ok := firstSwitchTo(events, id, start)
			if !ok || at >= start+2*time.Second {
				t.Errorf("seed %d: %s not dominant within 2 s of turn %d; events %v", seed, id, turn, events)
				continue
			}
			if turn%2 == 0 {
				toLoud = append(toLoud, at-start)
			} else {
				toQuiet = append(toQuiet, at-start)
			}
		}
	}
	if len(toLoud) == 0 || len(toQuiet) == 0 {
		t.Fatal("no switches")
	}
	ml, mq := percentile(toLoud, 0.5), percentile(toQuiet, 0.5)
	t.Logf("median latency to the loud speaker %v, to the quiet one %v (%d turns each)", ml, mq, len(toLoud))
	if d := ml - mq; d > 300*time.Millisecond || d < -300*time.Millisecond {
		t.Errorf("median latencies differ by %v", d)
	}
}
