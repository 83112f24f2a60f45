package bench

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/podium-sfu/podium/internal/load"
)

func TestVerify(t *testing.T) {
	sc, err := load.StandardScenario(load.Fanout50)
	if err != nil {
		t.Fatal(err)
	}
	exp := sc.Expected()
	if len(exp) != 100 { // 50 receivers × (audio, video); the publisher shows nobody
		t.Fatalf("%d expectations for fanout-50, want 100", len(exp))
	}
	nominal := Rates{PacketsPerS: 16400, BitsPerS: 130e6}
	// all: every receiver gets the publisher's audio and its 720p video.
	all := func(height int) []load.Reception {
		var out []load.Reception
		for i := 1; i <= 50; i++ {
			r := "r-" + strconv.Itoa(i)
			out = append(out, load.Reception{Receiver: r, Source: "pub-1", Kind: "audio"},
				load.Reception{Receiver: r, Source: "pub-1", Kind: "video", Height: height})
		}
		return out
	}
	tally := func(samples ...[]load.Reception) *Tally {
		var t Tally
		for _, s := range samples {
			t.Add(s)
		}
		return &t
	}
	repeat := func(n int, s []load.Reception) [][]load.Reception {
		out := make([][]load.Reception, n)
		for i := range out {
			out[i] = s
		}
		return out
	}
	// withR7 replaces r-7's video with height (-1: r-7 gets no video).
	withR7 := func(height int) []load.Reception {
		var out []load.Reception
		for _, r := range all(720) {
			if r.Receiver == "r-7" && r.Kind == "video" {
				if height < 0 {
					continue
				}
				r.Height = height
			}
			out = append(out, r)
		}
		return out
	}
	cases := []struct {
		name      string
		samples   [][]load.Reception
		forwarded Rates
		problems  []string // substrings, one per expected problem
	}{
		{name: "held", samples: repeat(100, all(720)), forwarded: nominal},
		{name: "held 90 %: r-7 on 360p for 10 of 100 samples",
			samples: append(repeat(90, all(720)), repeat(10, withR7(360))...), forwarded: nominal},
		{name: "r-7 on 360p for 11 of 100 samples",
			samples:   append(repeat(89, all(720)), repeat(11, withR7(360))...),
			forwarded: nominal,
			problems:  []string{"r-7 got pub-1's video at 720p 89 %, at 360p 11 % (want 720p"}},
		{name: "r-7 without video for half the window",
			samples:   append(repeat(50, all(720)), repeat(50, withR7(-1))...),
			forwarded: nominal,
			problems:  []string{"r-7 got pub-1's video at 720p 50 %, nothing 50 %"}},
		{name: "everyone on 360p, forwarding a third",
			samples:   repeat(20, all(360)),
			forwarded: Rates{PacketsPerS: 5000, BitsPerS: 40e6},
			problems: append(fifty("got pub-1's video at 360p 100 % (want 720p"),
				"forwarded 5000.0 packets/s, nominal 16400.0 (-70 %", "forwarded 40.0 Mbit/s, nominal 130.0 (-69 %")},
		{name: "encodings right, packets 20 % over nominal (say, duplicates)",
			samples:   repeat(20, all(720)),
			forwarded: Rates{PacketsPerS: 16400 * 1.2, BitsPerS: 130e6},
			problems:  []string{"forwarded 19680.0 packets/s, nominal 16400.0 (+20 %"}},
		{name: "14 % under nominal is within tolerance",
			samples: repeat(20, all(720)), forwarded: Rates{PacketsPerS: 16400 * 0.86, BitsPerS: 130e6 * 0.86}},
		{name: "no sample at all", forwarded: nominal, problems: []string{"no sample"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := Verify(exp, tally(c.samples...), nominal, c.forwarded)
			if v.OK() != (len(c.problems) == 0) {
				t.Fatalf("OK=%v with problems %q, want problems %q", v.OK(), v.Problems, c.problems)
			}
			if len(v.Problems) != len(c.problems) {
				t.Fatalf("problems %q, want %d: %q", v.Problems, len(c.problems), c.problems)
			}
			for i, want := range c.problems {
				if !strings.Contains(v.Problems[i], want) {
					t.Errorf("problem %d is %q, want it to say %q", i, v.Problems[i], want)
				}
			}
			if !v.OK() && !strings.Contains(v.Error(), v.Problems[0]) {
				t.Errorf("Error() %q does not say %q", v.Error(), v.Problems[0])
			}
		})
	}
}

// fifty is one problem per receiver r-1 … r-50 ending in suffix.
func fifty(suffix string) []string {
	out := make([]string, 50)
	for i := range out {
		out[i] = "r-" + strconv.Itoa(i+1) + " " + suffix
	}
	return out
}

// The standard scenarios' nominal rates are those the floor facts name for
// the same shapes (meeting-8: 6,735 packets/s, about 30 Mbit/s).
func TestNominal(t *testing.T) {
	sc, err := load.StandardScenario(load.Meeting8)
	if err != nil {
		t.Fatal(err)
	}
	pps, bps, err := sc.Nominal(70)
	if err != nil {
		t.Fatal(err)
	}
	if pps < 6700 || pps > 6770 || bps < 28e6 || bps > 32e6 {
		t.Errorf("meeting-8 nominal %.0f packets/s %.1f Mbit/s, want about 6,735 and 30", pps, bps/1e6)
	}
}

// A scenario that does not hold fails the benchmark, naming who got what:
// receivers that send no congestion control feedback leave the SFU's estimate
// at its start (1 Mb/s), so a 720p stage (2.5 Mb/s) never reaches them. With
// feedback, the same run holds. The scenario is a small fanout on the busy
// test machine.
func TestForwardFailsWhenScenarioDoesNotHold(t *testing.T) {
	if testing.Short() {
		t.Skip("two 10 s runs of the benchmark")
	}
	stage := load.View{Width: 1280, Height: 720, Role: "stage"}
	sc := load.Scenario{Name: "fanout-2", Speech: load.SpeechRealistic,
		Participants: append(load.Group("pub", 1, load.ParticipantSpec{Audio: true, Video: load.VideoSimulcast, View: stage}),
			load.Group("r", 2, load.ParticipantSpec{View: stage})...)}
	run := func(noFeedback bool) (ForwardResult, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		return Forward(ctx, ForwardOptions{Custom: &sc, Warmup: 8 * time.Second, Duration: 4 * time.Second,
			Command: childCommand, Seed: 1, NoFeedback: noFeedback})
	}
	res, err := run(true)
	var held *ScenarioError
	if !errors.As(err, &held) {
		t.Fatalf("without feedback: error %v, want a ScenarioError (%s)", err, res.Line())
	}
	for _, r := range []string{"r-1", "r-2"} {
		if !strings.Contains(err.Error(), r+" got pub-1's video") {
			t.Errorf("the error does not say what %s got:\n%v", r, err)
		}
	}
	if !strings.Contains(res.Line(), "scenario_held=false") {
		t.Errorf("line %q", res.Line())
	}
	t.Logf("without feedback: %v", err)
	if raceEnabled {
		t.Log("with feedback: not run under the race detector (the estimate needs an unhurried server to climb)")
		return
	}
	// With feedback every stream holds its encoding. (The forwarded rate may
	// still fall short on a busy machine, where delay spikes make the estimate
	// drop a temporal layer now and then: TestVerify covers the rate check.)
	res, err = run(false)
	if err != nil && !errors.As(err, &held) {
		t.Fatal(err)
	}
	if res.Verdict.Held != 4 || res.Verdict.Streams != 4 {
		t.Errorf("with feedback: %d of %d streams held\n%v\n%s", res.Verdict.Held, res.Verdict.Streams, err, res.Summary())
	}
}
