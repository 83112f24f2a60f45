//go:build linux

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/podium-sfu/podium/internal/bench"
	"github.com/podium-sfu/podium/internal/server"
)

// The bandwidth adaptation scenarios of docs/adaptation.md: a 720p simulcast
// sender on the host, and a receiver that shows it on stage from behind a
// shaped link. Each test prints its figures on an "ADAPTATION" line and, with
// PODIUM_ADAPTATION_DIR set, writes the samples as CSV and SVG plots there.

// rig is one scenario's server, browsers and sampler.
type rig struct {
	t        *testing.T
	srv      *server.Server
	room     string
	link     *Link
	receiver *Browser
	senderID string
	s        *sampler
	start    time.Time
	// topHeight is the height decoded on the top layer once steady.
	topHeight int
	marks     []mark // link changes, for the plots
}

type mark struct {
	at   time.Time
	kbps int // cap in force from then on (0: none)
}

func newRig(t *testing.T, room string) *rig {
	if testing.Short() {
		t.Skip("slow: browsers behind a shaped link")
	}
	link := newShapedLink(t) // before the server: its media port binds the link's address
	return startRig(t, room, link, startServerReachableFrom(t, link))
}

// startRig joins a sender (on the host; senderOpts add to its launch options)
// and the receiver behind link to srv's room, the receiver's stage on the sender.
func startRig(t *testing.T, room string, link *Link, srv *server.Server, senderOpts ...chromedp.ExecAllocatorOption) *rig {
	base := srv.URL() + room + "?name="
	sender := launch(t, "Sender", append([]chromedp.ExecAllocatorOption{secureOrigin(srv)}, senderOpts...)...)
	senderID := sender.join(base, "Sender")
	receiver := launchIn(t, link, "Receiver")
	receiver.join(base, "Receiver")
	if err := receiver.eval(fmt.Sprintf(`window.podium.stage(%q); true`, senderID), nil); err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, srv: srv, room: room, link: link, receiver: receiver, senderID: senderID, start: time.Now()}
	r.s = startSampler(t, receiver, senderID)
	r.marks = append(r.marks, mark{at: r.start})
	return r
}

// steady waits until the receiver has been decoding the top encoding at 20 fps
// or more for 3 s, and records the height it decodes there.
func (r *rig) steady(timeout time.Duration) {
	r.t.Helper()
	took, ok := r.s.Await(timeout, func(ss videoSamples) bool {
		now := time.Now()
		w := ss.Window(now.Add(-3*time.Second), now)
		if ss.Span(now.Add(-3*time.Second), now) < 2500*time.Millisecond {
			return false
		}
		for _, s := range w {
			if !s.OK || s.Encoding != 2 {
				return false
			}
		}
		return w.MeanFPS(time.Time{}, time.Time{}) >= 20
	})
	all := r.s.Samples()
	if !ok {
		r.t.Fatalf("receiver not steady on the top encoding within %v: %s", timeout, all.Summary(r.start, time.Time{}))
	}
	last := all[len(all)-1]
	r.topHeight = last.Height
	r.t.Logf("steady on the top encoding (%dx%d) %v after joining: %s", last.Width, last.Height,
		took.Round(100*time.Millisecond), all.Summary(time.Now().Add(-3*time.Second), time.Time{}))
}

func (r *rig) cap(kbps int) time.Time {
	now := time.Now()
	r.link.Cap(kbps)
	r.marks = append(r.marks, mark{at: now, kbps: kbps})
	return now
}

func (r *rig) uncap() time.Time {
	now := time.Now()
	r.link.Uncap()
	r.marks = append(r.marks, mark{at: now})
	return now
}

// onTop: the SFU forwards the top encoding and the receiver decodes it:
// frames taller than half the top height it had when steady, which the middle
// encoding (half of the top) never sends. Not the whole height: Chromium on a
// busy box scales its capture down for all encodings (CI58: 960x540 and
// 240x135 of a 1280x720 camera, the SFU on the top encoding for the 25 s after
// a 128 kb/s cap was lifted, and the test failed for the sender's size).
func (r *rig) onTop(s videoSample) bool {
	return s.OK && s.Encoding == 2 && s.Height > r.topHeight/2
}

// report prints the scenario's figures and writes its samples and plots.
func (r *rig) report(scenario string, figures ...any) {
	r.t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "ADAPTATION scenario=%s", scenario)
	for i := 0; i+1 < len(figures); i += 2 {
		fmt.Fprintf(&b, " %v=%v", figures[i], figures[i+1])
	}
	r.t.Log(b.String())
	r.t.Logf("SFU downlink to the receiver: %s", r.downlink())
	dir := os.Getenv("PODIUM_ADAPTATION_DIR")
	if dir == "" {
		return
	}
	if err := r.write(dir, scenario, b.String()); err != nil {
		r.t.Errorf("writing the samples: %v", err)
	}
}

// write saves the samples as CSV and two SVG charts: rates (estimate, cap,
// received video) and the layer (the SFU's encoding, the decoded height).
func (r *rig) write(dir, scenario, summary string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	ss := r.s.Samples()
	var csv strings.Builder
	csv.WriteString("t_s,cap_kbps,estimate_kbps,allocated_kbps,received_kbps,encoding,width,height,fps,suspended,switches\n")
	var ts, est, capped, recv, enc, height []float64
	for i, s := range ss {
		t := s.At.Sub(r.start).Seconds()
		kbps := 0.0
		if i > 0 && s.OK && ss[i-1].OK {
			if dt := s.At.Sub(ss[i-1].At).Seconds(); dt > 0 {
				kbps = float64(s.BytesReceived-ss[i-1].BytesReceived) * 8 / 1000 / dt
			}
		}
		c := r.capAt(s.At)
		fmt.Fprintf(&csv, "%.1f,%d,%d,%d,%.0f,%d,%d,%d,%.1f,%v,%d\n", t, c, s.Estimate/1000, s.Allocated/1000, kbps,
			s.Encoding, s.Width, s.Height, s.FPS, s.Suspended, s.Switches)
		ts, est, recv = append(ts, t), append(est, float64(s.Estimate)/1e6), append(recv, kbps/1000)
		capped = append(capped, float64(c)/1000)
		enc, height = append(enc, float64(s.Encoding)), append(height, float64(s.Height)/360)
	}
	rates := bench.Chart{Title: scenario + ": estimate and received video", XLabel: "time (s)", YLabel: "Mb/s",
		Series: []bench.Series{{Name: "SFU estimate", X: ts, Y: est}, {Name: "video received", X: ts, Y: recv}, {Name: "cap (0: none)", X: ts, Y: capped}}}
	layer := bench.Chart{Title: scenario + ": chosen layer", XLabel: "time (s)", YLabel: "encoding (0 q, 1 h, 2 f) · height / 360",
		Series: []bench.Series{{Name: "SFU encoding", X: ts, Y: enc}, {Name: "decoded height / 360", X: ts, Y: height}}}
	files := map[string][]byte{
		scenario + ".csv":       []byte(csv.String()),
		scenario + "-rate.svg":  rates.SVG(),
		scenario + "-layer.svg": layer.SVG(),
		scenario + ".txt":       []byte(summary + "\n"),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// downlink is the receiver's downlink as the admin API reports it (repair and
// probing counters included), without the per-video part.
func (r *rig) downlink() string { return downlinkJSON(r.srv.URL(), r.room, "Receiver") }

// downlinkJSON is name's downlink in room as the admin API gives it, for a
// failure's log.
func downlinkJSON(base, room, name string) string {
	d, rtt, err := downlinkOf(base, room, name)
	switch {
	case err != nil:
		return err.Error()
	case d == nil:
		return name + " not found"
	}
	b, _ := json.Marshal(d)
	return fmt.Sprintf("ICE RTT %.1f ms, %s", rtt, b)
}

// capAt is the cap in force at t, in kb/s (0: none).
func (r *rig) capAt(t time.Time) int {
	c := 0
	for _, m := range r.marks {
		if !m.at.After(t) {
			c = m.kbps
		}
	}
	return c
}

// repairCounts are the receiver's inbound video counters, summed over its
// peer connections' inbound-rtp entries (getStats, read raw: the client's
// stats leave retransmissions out).
type repairCounts struct {
	Packets       int `json:"packetsReceived"`
	Lost          int `json:"packetsLost"`
	NACKs         int `json:"nackCount"`
	Retransmitted int `json:"retransmittedPacketsReceived"`
}

func (a repairCounts) minus(b repairCounts) repairCounts {
	return repairCounts{a.Packets - b.Packets, a.Lost - b.Lost, a.NACKs - b.NACKs, a.Retransmitted - b.Retransmitted}
}

func (b *Browser) videoRepair() (repairCounts, error) {
	var c repairCounts
	err := b.eval(`(async () => {
		const c = {packetsReceived: 0, packetsLost: 0, nackCount: 0, retransmittedPacketsReceived: 0};
		for (const pc of window.__podiumTest.pcs) {
			if (pc.connectionState === 'closed') continue;
			(await pc.getStats()).forEach(r => {
				if (r.type !== 'inbound-rtp' || r.kind !== 'video') return;
				for (const k of Object.keys(c)) c[k] += r[k] || 0;
			});
		}
		return c;
	})()`, &c)
	return c, err
}

func secs(d time.Duration) string { return fmt.Sprintf("%.1fs", d.Seconds()) }

// capFreezeGuard is the longest freeze under the 500 kb/s cap that passes.
// The target is 1 s and this box measures 0-0.6 s, but project CI on a slower
// box froze 1.6 s once: its sender's top layer ran at 650 kb/s (not 1.1 Mb/s),
// so the first decrease left 456 kb/s, the SFU switched to the middle layer,
// and that layer decoded almost nothing for 2 s until the estimate fell to
// 400 kb/s and the lowest layer played: a lost packet of its keyframe was held
// for the then fixed 2 s resync hold (docs/adaptation.md). An SFU that does
// not switch down fails the test's first check (a lower layer within 3 s).
const capFreezeGuard = 2 * time.Second

// Cap at 500 kb/s after a steady start: a lower layer within 3 s, no freeze over
// 1 s (logged when missed; fails past capFreezeGuard). Cap lifted: the top
// layer again within 10 s (the reference SFU: ~40 s).
func TestAdaptationCapAndRecovery(t *testing.T) {
	r := newRig(t, "e2e-adapt-cap")
	r.steady(45 * time.Second)

	capped := r.cap(500)
	time.Sleep(10 * time.Second)
	ss := r.s.Samples()
	down, ok := ss.UntilHeightBelow(capped, r.topHeight)
	sfuDown, sfuOK := ss.Until(capped, func(s videoSample) bool { return s.Encoding >= 0 && s.Encoding < 2 })
	freeze := ss.LongestFreeze(capped, time.Time{})
	t.Logf("capped at 500 kb/s: %s", ss.Summary(capped, time.Time{}))
	if !ok || down > 3*time.Second {
		t.Errorf("receiver still decoding %dp %v after the cap (found %v): want a lower layer within 3 s", r.topHeight, secs(down), ok)
	}
	if !sfuOK {
		t.Errorf("the SFU never reported a lower encoding under the cap")
	}
	switch {
	case freeze > capFreezeGuard:
		t.Errorf("video froze for %v under the cap, want at most %v; from the cap:%s", freeze, capFreezeGuard, ss.Timeline(capped, time.Time{}))
	case freeze > time.Second:
		t.Logf("TARGET NOT MET: video froze for %v under the cap, want at most 1 s; from the cap:%s", freeze, ss.Timeline(capped, time.Time{}))
	}

	lifted := r.uncap()
	back, ok := r.s.Await(10*time.Second, func(ss videoSamples) bool {
		_, on := ss.Until(lifted, r.onTop)
		return on
	})
	ss = r.s.Samples()
	up, _ := ss.Until(lifted, r.onTop)
	t.Logf("cap lifted: %s", ss.Summary(lifted, time.Time{}))
	if !ok {
		t.Errorf("not back on the top layer within 10 s of lifting the cap (waited %v)", back)
	}
	time.Sleep(2 * time.Second) // a little of the recovered state, for the plot
	r.report("cap-500-then-lifted",
		"time_to_lower_layer", secs(down), "sfu_time_to_lower_encoding", secs(sfuDown),
		"longest_freeze", secs(freeze), "time_to_top_after_lift", secs(up))
}

// Cap at 128 kb/s, with a high-entropy 720p camera (noisyCamera: temporal noise
// over the whole picture and a moving test pattern, as real sensors give; the
// plain fake camera is far cheaper to encode): video keeps playing at 7 fps or
// more with no freeze over 1 s (issue 22's targets; the guards are 2 fps and 10 s), judged over 20 s of steady state once the
// 720p stream's queue and the switch down are over (10 s after the cap); the
// SFU drops temporal layers before the video freezes. The transition is
// reported. Then the cap is lifted: back on the top layer within 10 s
// (issue 22's target is 5 s: see the figure it reports).
func TestAdaptationAt128kbps(t *testing.T) {
	// The guards: a picture that keeps coming back (two keyframe requests'
	// 3 s waits and their keyframes' trips through the cap at most).
	const guardFreezeAt128, guardFPSAt128 = 10 * time.Second, 2.0
	if testing.Short() {
		t.Skip("slow: browsers behind a shaped link")
	}
	const w, h = 1280, 720
	link := newShapedLink(t)
	r := startRig(t, "e2e-adapt-128", link, startServerReachableFrom(t, link), noisyCamera(t, red, w, h))
	t.Logf("sender's camera: %dx%d high-entropy, ffmpeg lavfi %q", w, h, noisyCameraGraph(red, w, h))
	r.steady(45 * time.Second)
	capped := r.cap(128)
	time.Sleep(30 * time.Second)
	from := capped.Add(10 * time.Second)
	ss := r.s.Samples()
	fps := ss.MeanFPS(from, time.Time{})
	freeze := ss.LongestFreeze(from, time.Time{})
	suspended := 0
	for _, s := range ss.Window(capped, time.Time{}) {
		if s.Suspended {
			suspended++
		}
	}
	t.Logf("capped at 128 kb/s, steady state: %s", ss.Summary(from, time.Time{}))
	t.Logf("SFU downlink under the cap: %s", r.downlink())

	lifted := r.uncap()
	_, ok := r.s.Await(25*time.Second, func(ss videoSamples) bool {
		_, on := ss.Until(lifted, r.onTop)
		return on
	})
	ss = r.s.Samples()
	up, _ := ss.Until(lifted, r.onTop)
	t.Logf("cap lifted: %s", ss.Summary(lifted, time.Time{}))
	r.report("cap-128", "content", "noisy-720p", "mean_fps", fmt.Sprintf("%.1f", fps), "longest_freeze", secs(freeze),
		"transition_freeze", secs(ss.LongestFreeze(capped, from)), "samples_suspended", suspended,
		"time_to_top_after_lift", secs(up))
	// Issue 22's targets (7 fps, no freeze over 1 s) are reported, not failed
	// on: most runs meet them, but CI at 46a0ff4 decoded 4.1 fps with a 6 s
	// freeze (4 PLIs, 491 NACK answers over the retransmission budget). The
	// guards fail a picture that stopped.
	issueTarget(t, fps >= 7, 22, "%.1f fps decoded under a 128 kb/s cap (10–30 s after it), want at least 7", fps)
	if fps < guardFPSAt128 {
		t.Errorf("%.1f fps decoded under a 128 kb/s cap (10–30 s after it), guard: at least %v", fps, guardFPSAt128)
	}
	// Freezes are counted in sampler periods: CI read five periods as
	// 1.000037 s and failed on timer jitter, so compare at that resolution.
	// A loss the NACKs did not repair (budget spent at the cap) waits for
	// Chromium's keyframe request after 3 s without a decodable frame (CI:
	// 3.2 s, 6.0 s).
	issueTarget(t, freeze.Round(sampleEvery) <= time.Second, 22,
		"video froze for %v under a 128 kb/s cap (10–30 s after it), want at most 1 s", freeze)
	if freeze.Round(sampleEvery) > guardFreezeAt128 {
		t.Errorf("video froze for %v under a 128 kb/s cap (10–30 s after it), guard: at most %v", freeze, guardFreezeAt128)
	}
	// Issue 22 asks for 5 s; measured 2.4–4.9 s in 8 runs, 7.4 s in one and
	// ~10 s in a CI run (the probes' back-off after failures at the cap decides
	// it: the estimate stayed at the cap's for seconds after the lift), so 5 s
	// is the open issue's target and the guard is reaching the top at all.
	issueTarget(t, ok && up <= 5*time.Second, 22, "back on the top layer %v after lifting the 128 kb/s cap (reached: %v), want within 5 s", secs(up), ok)
	if !ok {
		t.Errorf("not back on the top layer within 25 s of lifting the 128 kb/s cap")
	}
}

// A steady cap just above what the top layer needs: after settling, no layer
// switch in 60 s at 3 Mb/s, at most three down-and-up pairs and 75 % on top
// at the tight cap. Run at 3 Mb/s, then at a cap computed from the measured
// rate of the top layer (need × 1.25: the upgrade margin of 5 %, an estimate
// that settles near 90 % of a tbf's rate, the wire's overhead), both on the
// top layer after 15 s; then at that cap again reached from a 500 kb/s dip,
// where the estimate has to climb to it: judged as the tight cap after 30 s of
// settling (docs/adaptation.md). A tight phase that fails runs once more when
// the encoder was still climbing, and once when its queue lost more than fair
// runs do.
func TestAdaptationSteadyCapDoesNotFlap(t *testing.T) {
	// lossyAtTightCap: more packets lost in the judged minute than any fair
	// run showed (29–91); such a phase may run once more.
	const lossyAtTightCap = 120
	r := newRig(t, "e2e-adapt-steady")
	r.steady(45 * time.Second)
	phases := []struct {
		name      string
		kbps      int // 0: the tight cap, from the need measured in the first phase
		fromBelow bool
	}{{"steady-cap-3000k", 3000, false}, {"steady-cap-tight", 0, false}, {"steady-cap-tight-from-below", 0, true}}
	need := 0
	remeasured, retriedLossy := false, false
	for i := 0; i < len(phases); i++ {
		ph := phases[i]
		tight := ph.kbps == 0
		if tight {
			ph.kbps = (need*125/100 + 999) / 1000
		}
		if ph.fromBelow {
			r.cap(500)
			time.Sleep(5 * time.Second)
		}
		capped := r.cap(ph.kbps)
		// From above the layer just stays; from below the estimate has to
		// climb to the cap by probing it, and an upgrade that fails on the
		// way backs off (measured: on the top layer 22 s after the cap).
		settling := 15 * time.Second
		if ph.fromBelow {
			settling = 30 * time.Second
		}
		settle := capped.Add(settling)
		time.Sleep(time.Until(settle.Add(60 * time.Second)))
		ss := r.s.Samples()
		if need == 0 {
			// What the top layer takes, as the SFU allocates it (video and
			// audio), over the last 10 s at 3 Mb/s: by then the sender's
			// encoder has finished ramping up, which it has not when the
			// receiver first reaches the top layer (measured: 844 kb/s then,
			// 1132 kb/s a minute later).
			for _, s := range ss.Window(time.Now().Add(-10*time.Second), time.Time{}) {
				need = max(need, s.Allocated)
			}
		}
		switches := ss.SFUSwitches(settle, time.Time{})
		heights := ss.HeightChanges(settle, time.Time{})
		onTop, topSum, topMax := 0, 0, 0
		w := ss.Window(settle, time.Time{})
		for _, s := range w {
			if s.Encoding == 2 {
				onTop++
				topSum += s.Allocated
				topMax = max(topMax, s.Allocated)
			}
		}
		// At 3 Mb/s nothing may move. At the tight cap the top layer loses
		// packets now and then: the SFU does not pace, so a burst of the
		// noisy encoder's frames, or a 720p keyframe, arrives at the
		// publisher's pacing rate and overflows the 100 ms drop-tail queue
		// (late November, CI and local runs: 29–91 packets lost a minute,
		// 2–4 switches, 83–95 % on top; docs/adaptation.md). Those are the
		// estimate answering real loss, and a failed upgrade backs off, so
		// the test allows three down-and-up pairs a minute and wants three
		// quarters on top: what it guards against is flapping without
		// hysteresis, 8 switches a minute at 3 Mb/s on a busy box.
		maxSwitches, minOnTop := 0, len(w)
		if tight {
			maxSwitches, minOnTop = 6, len(w)*3/4
		}
		failed := switches > maxSwitches || onTop < minOnTop
		again := false // the phase's premise failed, not the SFU: run it once more
		switch {
		case failed && tight && !remeasured && onTop > 0 && topSum/onTop > need*103/100:
			// The sender's encoder was still climbing: the top layer took
			// more on average than the peak the cap was computed from
			// (measured on a busy CI box: 1165 kb/s, then 1.2 Mb/s), so the
			// cap was tighter than the test claims. Once: measure again and
			// run the phase again.
			t.Logf("%s: the top layer took %d kb/s on average, above the %d kb/s measured: cap again at 1.25 × %d kb/s and run the phase again",
				ph.name, topSum/onTop/1000, need/1000, topMax/1000)
			need, remeasured, again = topMax, true, true
		case failed && tight && !retriedLossy && ss.Lost(settle, time.Time{}) > lossyAtTightCap:
			// The drop-tail queue lost more than in the runs this test was
			// set from (29–91 a minute): a busy box's encoder bursts, to which
			// a falling estimate is the right answer. Flapping without
			// hysteresis fails again; once: run the phase again. (CI at
			// 3bab1cd: 194 lost, the estimate 1.08–1.29 Mb/s under a
			// 1,423 kb/s cap, 8 switches, 53 % on top.)
			t.Logf("%s: more than %d packets lost in the minute (%s): run the phase again",
				ph.name, lossyAtTightCap, ss.Summary(settle, time.Time{}))
			retriedLossy, again = true, true
		}
		if again {
			if !ph.fromBelow {
				r.cap(3000) // from above again: back on the top layer first
				time.Sleep(15 * time.Second)
			}
			i--
			continue
		}
		t.Logf("%s: cap %d kb/s (top layer needs %d kb/s): %s", ph.name, ph.kbps, need/1000, ss.Summary(settle, time.Time{}))
		r.report(ph.name, "cap_kbps", ph.kbps, "top_layer_needs_kbps", need/1000,
			"sfu_switches_per_minute", switches, "decoded_height_changes", heights,
			"share_on_top", fmt.Sprintf("%.0f%%", 100*float64(onTop)/float64(max(len(w), 1))))
		if switches > maxSwitches {
			t.Errorf("%s: %d layer switches in the 60 s after settling, want at most %d", ph.name, switches, maxSwitches)
		}
		if onTop < minOnTop {
			t.Errorf("%s: on the top layer in %d of %d samples after settling, want %d (the cap is above its rate)", ph.name, onTop, len(w), minOnTop)
		}
	}
}

// 5 % random loss on the receiver's link: video keeps decoding at 25 fps or
// more on the top layer, repaired by retransmissions: the receiver sends NACKs
// and receives retransmitted packets (its raw getStats).
func TestAdaptationFivePercentLoss(t *testing.T) {
	r := newRig(t, "e2e-adapt-loss")
	r.steady(45 * time.Second)
	lossy := time.Now()
	r.link.Loss(5)
	r.marks = append(r.marks, mark{at: lossy})
	time.Sleep(5 * time.Second)
	from := time.Now()
	before, err := r.receiver.videoRepair()
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Second)
	after, err := r.receiver.videoRepair()
	if err != nil {
		t.Fatal(err)
	}
	repair := after.minus(before)
	ss := r.s.Samples()
	fps := ss.MeanFPS(from, time.Time{})
	w := ss.Window(from, time.Time{})
	onTop := 0
	for _, s := range w {
		if s.Encoding == 2 {
			onTop++
		}
	}
	first, last := w[0], w[len(w)-1]
	t.Logf("5 %% loss: %s", ss.Summary(from, time.Time{}))
	r.report("loss-5pct", "mean_fps", fmt.Sprintf("%.1f", fps), "share_on_top", fmt.Sprintf("%.0f%%", 100*float64(onTop)/float64(max(len(w), 1))),
		"packets_lost", last.PacketsLost-first.PacketsLost, "nacks_sent", repair.NACKs,
		"retransmissions_received", repair.Retransmitted, "longest_freeze", secs(ss.LongestFreeze(from, time.Time{})))
	t.Logf("receiver over the 20 s judged: %+v; the link: %s", repair, r.link.Qdiscs())
	// Loss happened and was repaired: the receiver asked for the missing packets
	// and the SFU resent them (at 5 % of ~100 packets/s, some hundred of each).
	if repair.Packets == 0 || repair.NACKs < 20 || repair.Retransmitted < repair.NACKs/4 {
		t.Errorf("under 5 %% loss over 20 s the receiver got %d video packets, lost %d, sent %d NACKs and received %d retransmissions: "+
			"want at least 20 NACKs, and retransmissions for at least a quarter of them (the SFU answers NACKs)",
			repair.Packets, repair.Lost, repair.NACKs, repair.Retransmitted)
	}
	if fps < 25 {
		t.Errorf("%.1f fps decoded under 5 %% loss, want at least 25", fps)
	}
	if onTop < len(w)*9/10 {
		t.Errorf("on the top layer in %d of %d samples under 5 %% loss, want at least 90 %%", onTop, len(w))
	}
}
