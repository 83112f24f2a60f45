package e2e

import (
	"encoding/json"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/podium-sfu/podium/internal/config"
	"github.com/podium-sfu/podium/internal/room"
	"github.com/podium-sfu/podium/internal/server"
)

// p2pInfo is a page's direct connection as the test reads it.
type p2pInfo struct {
	Phase string `json:"phase"`
	Epoch int    `json:"epoch"`
	Peer  string `json:"peer"`
	// The selected candidate pair of the direct connection (empty without one).
	Local, Remote string
	// The direct connection's own candidates that are not relayed (host,
	// server or peer reflexive): where the other browser reaches it directly.
	Locals []string
	// Remote addresses of the selected pairs of the page's other (SFU) connections.
	SFU []string
	// The direct connection's inbound audio: packets and samples received.
	AudioPackets, AudioSamples, Concealed float64
}

// p2p reads the page's direct connection: phase, selected pair, audio counters.
func (b *Browser) p2p() (p2pInfo, error) {
	var out p2pInfo
	err := b.eval(`(async () => {
		const c = window.podium && window.podium.conference;
		if (!c) return {phase: 'none', SFU: []};
		const st = c.p2p;
		const out = {phase: st.phase, epoch: st.epoch, peer: st.peer || '', Local: '', Remote: '', Locals: [], SFU: [],
			AudioPackets: 0, AudioSamples: 0, Concealed: 0};
		const selected = async (pc) => {
			const r = await pc.getStats();
			let pair = null;
			r.forEach((v) => { if (v.type === 'transport' && v.selectedCandidatePairId) pair = r.get(v.selectedCandidatePairId); });
			// Firefox has no transport stats; it marks the pair in use
			// 'selected' (several can be nominated and succeeded).
			if (!pair) r.forEach((v) => { if (v.type === 'candidate-pair' && v.selected) pair = v; });
			if (!pair) r.forEach((v) => { if (v.type === 'candidate-pair' && v.nominated && v.state === 'succeeded') pair = v; });
			if (!pair) return null;
			const l = r.get(pair.localCandidateId), rm = r.get(pair.remoteCandidateId);
			const addr = (x) => x ? (x.address || x.ip) + ':' + x.port : '';
			return {local: addr(l), remote: addr(rm), report: r};
		};
		const direct = c.p2pPeerConnection;
		if (direct) {
			const s = await selected(direct);
			if (s) {
				out.Local = s.local; out.Remote = s.remote;
				s.report.forEach((v) => {
					if (v.type === 'local-candidate' && v.candidateType !== 'relay') out.Locals.push((v.address || v.ip) + ':' + v.port);
					if (v.type === 'inbound-rtp' && v.kind === 'audio') {
						out.AudioPackets = v.packetsReceived || 0;
						out.AudioSamples = v.totalSamplesReceived || 0;
						out.Concealed = v.concealedSamples || 0;
					}
				});
			}
		}
		for (const pc of window.__podiumTest.pcs) {
			if (pc === direct || pc.connectionState !== 'connected') continue;
			const s = await selected(pc);
			if (s) out.SFU.push(s.remote);
		}
		return out;
	})()`, &out)
	return out, err
}

// inPhase waits until the page's direct connection is in phase.
func (b *Browser) inPhase(t *testing.T, phase string, timeout time.Duration) p2pInfo {
	t.Helper()
	var info p2pInfo
	within(t, b.name+" direct connection "+phase, timeout, func() (bool, string) {
		var err error
		info, err = b.p2p()
		if err != nil {
			return false, err.Error()
		}
		return info.Phase == phase, fmt.Sprintf("phase %q (epoch %d)", info.Phase, info.Epoch)
	})
	return info
}

// switchSample is what the in-page sampler measured of one remote participant
// across a switch: the longest time without a newly decoded frame of its video
// (from whichever connection is shown) and without new audio packets, and the
// samples whose tile did not show its colour.
type switchSample struct {
	MaxVideoGapMS, MaxAudioGapMS float64
	Samples, Bad                 int
	BadDetail                    string
	Switches                     int // changes of the shown video track
	// When the longest video gap was measured, ms after the sampler started.
	MaxVideoGapAtMS float64
}

// startSampler samples, every 100 ms, the page's stats of participant w (the
// shown connection's rows) and the colour of its tile.
func (b *Browser) startSampler(t *testing.T, w who) {
	t.Helper()
	js := fmt.Sprintf(`(() => {
		const peer = %q, want = [%d, %d, %d], maxDist = %d;
		const t0 = performance.now();
		const s = window.__p2pSample = {MaxVideoGapMS: 0, MaxVideoGapAtMS: 0, MaxAudioGapMS: 0, Samples: 0, Bad: 0, BadDetail: '', Switches: 0, stop: false};
		let vTrack = '', vFrames = -1, vAt = performance.now(), aTrack = '', aPkts = -1, aAt = performance.now();
		const tick = async () => {
			if (s.stop) return;
			const st = await window.podium.stats();
			const now = performance.now();
			for (const r of st.inbound) {
				if (r.participantId !== peer) continue;
				if (r.kind === 'video') {
					if (r.trackId !== vTrack) { if (vTrack !== '') s.Switches++; vTrack = r.trackId; vFrames = r.framesDecoded; if (r.framesDecoded > 0) vAt = now; }
					else if (r.framesDecoded > vFrames) { vFrames = r.framesDecoded; vAt = now; }
				} else {
					if (r.trackId !== aTrack) { aTrack = r.trackId; aPkts = r.packetsReceived; if (r.packetsReceived > 0) aAt = now; }
					else if (r.packetsReceived > aPkts) { aPkts = r.packetsReceived; aAt = now; }
				}
			}
			if (now - vAt > s.MaxVideoGapMS) { s.MaxVideoGapMS = now - vAt; s.MaxVideoGapAtMS = now - t0; }
			s.MaxAudioGapMS = Math.max(s.MaxAudioGapMS, now - aAt);
			const tile = document.querySelector('.tile[data-participant-id="' + peer + '"]');
			const v = tile && tile.querySelector('video');
			s.Samples++;
			if (!v || v.hidden || v.readyState < 2 || !v.videoWidth) {
				s.Bad++; s.BadDetail = 'no picture at sample ' + s.Samples;
			} else {
				const c = document.createElement('canvas'); c.width = 8; c.height = 8;
				const g = c.getContext('2d', {willReadFrequently: true});
				g.drawImage(v, v.videoWidth * 0.3, v.videoHeight * 0.3, v.videoWidth * 0.4, v.videoHeight * 0.4, 0, 0, 8, 8);
				const d = g.getImageData(0, 0, 8, 8).data;
				let r = 0, gr = 0, bl = 0;
				for (let i = 0; i < d.length; i += 4) { r += d[i]; gr += d[i + 1]; bl += d[i + 2]; }
				const n = d.length / 4;
				const dist = Math.hypot(r / n - want[0], gr / n - want[1], bl / n - want[2]);
				if (dist > maxDist) { s.Bad++; s.BadDetail = 'rgb(' + [r / n, gr / n, bl / n].map(Math.round) + ') at sample ' + s.Samples; }
			}
			setTimeout(tick, 100);
		};
		tick();
		return true;
	})()`, w.ID, w.Colour.R, w.Colour.G, w.Colour.B, maxColourDistance)
	if err := b.eval(js, nil); err != nil {
		t.Fatalf("%s: start the sampler: %v", b.name, err)
	}
}

func (b *Browser) stopSampler(t *testing.T) switchSample {
	t.Helper()
	var s switchSample
	if err := b.eval(`(() => { const s = window.__p2pSample; s.stop = true; return s; })()`, &s); err != nil {
		t.Fatalf("%s: read the sampler: %v", b.name, err)
	}
	return s
}

// forwarding measures, over d, the video packets per second the SFU forwards
// in the room and the server's CPU (this test process: the server runs in it)
// as a share of one core.
func forwarding(t *testing.T, srv *server.Server, roomName string, d time.Duration) (videoPPS, audioPPS, cpu float64) {
	t.Helper()
	read := func() (v, a uint64, at time.Time, cpuSec float64) {
		rooms, _ := srv.Hub().Collect(time.Now())
		for _, r := range rooms {
			if r.Name == roomName {
				v, a = r.Totals.Kinds[room.KindVideo].PacketsOut, r.Totals.Kinds[room.KindAudio].PacketsOut
			}
		}
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		cpuSec = float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
		return v, a, time.Now(), cpuSec
	}
	v0, a0, t0, c0 := read()
	time.Sleep(d)
	v1, a1, t1, c1 := read()
	secs := t1.Sub(t0).Seconds()
	return float64(v1-v0) / secs, float64(a1-a0) / secs, (c1 - c0) / secs
}

// Hybrid P2P with two, then three Chromiums (docs/p2p.md). Two alone connect
// directly after the 5 s hold: each shows the other's colour, the selected
// candidate pair of each direct connection is the other browser's (not the
// SFU's address), the SFU forwards them (next to) nothing and audio flows on
// the direct connection. A third joins: everyone sees everyone through the
// SFU, the first two without a gap over 500 ms in the other's video or audio
// and without a sample of a wrong or missing picture, and their direct
// connection closes. The third leaves: P2P again, no sooner than 5 s after,
// again without a gap. Last, the room's p2p setting off puts the two back on
// the SFU, for the SFU-mode figures of docs/p2p.md.
func TestP2PTwoPartyCall(t *testing.T) {
	srv := startServerWith(t, func(c *config.Config) { c.P2P = true })
	const roomName = "e2e-p2p"
	base := srv.URL() + roomName + "?video=320x180&name="
	ann := launch(t, "Ann", camera(t, red, 320, 180), autoplay)
	ann.withMicrophone(true)
	bob := launch(t, "Bob", camera(t, green, 320, 180), autoplay)
	bob.withMicrophone(true)
	annWho := who{Name: "Ann", ID: ann.join(base, "Ann"), Colour: red}
	bobWho := who{Name: "Bob", ID: bob.join(base, "Bob"), Colour: green}
	joined := time.Now()

	a := ann.inPhase(t, "direct", 30*time.Second)
	b := bob.inPhase(t, "direct", 10*time.Second)
	t.Logf("direct after %v (hold %v)", time.Since(joined).Round(time.Millisecond), room.P2PHold)
	within(t, "Ann shows Bob", 5*time.Second, func() (bool, string) { return showsWhoDirect(ann, bob, bobWho) })
	within(t, "Bob shows Ann", 5*time.Second, func() (bool, string) { return showsWhoDirect(bob, ann, annWho) })

	// Each side's selected pair ends at the other browser, not at the SFU. On a
	// host with several interfaces the two browsers may report different pairs
	// for a moment while the controlling side's nomination lands: wait until they
	// agree; never agreeing fails.
	within(t, "selected pairs", 10*time.Second, func() (bool, string) {
		var err error
		if a, err = ann.p2p(); err != nil {
			return false, err.Error()
		}
		if b, err = bob.p2p(); err != nil {
			return false, err.Error()
		}
		agree := a.Remote != "" && a.Remote == b.Local && b.Remote == a.Local
		return agree, fmt.Sprintf("Ann %s→%s, Bob %s→%s", a.Local, a.Remote, b.Local, b.Remote)
	})
	for _, sfu := range append(a.SFU, b.SFU...) {
		if sfu == a.Remote || sfu == b.Remote {
			t.Fatalf("a direct pair ends at the SFU's %s", sfu)
		}
	}
	if len(a.SFU) == 0 || len(b.SFU) == 0 {
		t.Fatalf("SFU connections not up beside the direct one: Ann %v, Bob %v", a.SFU, b.SFU)
	}
	t.Logf("selected pairs: Ann %s → %s, Bob %s → %s; SFU at %v", a.Local, a.Remote, b.Local, b.Remote, a.SFU)

	// The SFU forwards nothing of the two to each other; audio flows directly.
	videoPPS, audioPPS, cpuP2P := forwarding(t, srv, roomName, 5*time.Second)
	if videoPPS >= 30 {
		t.Fatalf("P2P mode: the SFU forwards %.1f video packets/s in the room, want < 30", videoPPS)
	}
	a2, _ := ann.p2p()
	b2, _ := bob.p2p()
	if a2.AudioPackets <= a.AudioPackets || b2.AudioPackets <= b.AudioPackets || a2.AudioSamples <= a.AudioSamples || b2.AudioSamples <= b.AudioSamples {
		t.Fatalf("audio on the direct connection not flowing: Ann %v→%v packets, Bob %v→%v", a.AudioPackets, a2.AudioPackets, b.AudioPackets, b2.AudioPackets)
	}
	t.Logf("P2P mode: SFU forwards %.1f video, %.1f audio packets/s; server CPU %.1f %% of a core; direct audio %.0f packets/s at Ann",
		videoPPS, audioPPS, cpuP2P*100, (a2.AudioPackets-a.AudioPackets)/5)
	if st, ok := srv.Hub().Room(roomName); ok {
		if s, _ := st.Stats(time.Now()); !s.P2PMode || s.P2PDirect != 2 {
			t.Fatalf("room stats: p2pMode %v, p2pDirect %d; want true, 2", s.P2PMode, s.P2PDirect)
		}
	}

	// A third participant: back to the SFU without a gap for the first two.
	ann.startSampler(t, bobWho)
	bob.startSampler(t, annWho)
	cid := launch(t, "Cid", camera(t, blue, 320, 180), autoplay)
	cid.withMicrophone(false)
	cidWho := who{Name: "Cid", ID: cid.join(base, "Cid"), Colour: blue}
	thirdJoined := time.Now()
	ann.inPhase(t, "off", 15*time.Second)
	bob.inPhase(t, "off", 5*time.Second)
	t.Logf("back on the SFU %v after the third joined", time.Since(thirdJoined).Round(time.Millisecond))
	time.Sleep(time.Second) // a second of SFU media in the samples
	sa, sb := ann.stopSampler(t), bob.stopSampler(t)
	checkSwitch(t, "Ann's view of Bob, third joins", sa)
	checkSwitch(t, "Bob's view of Ann, third joins", sb)
	within(t, "Ann shows Bob and Cid", 10*time.Second, func() (bool, string) { return showsWho(ann, bobWho, cidWho) })
	within(t, "Bob shows Ann and Cid", 10*time.Second, func() (bool, string) { return showsWho(bob, annWho, cidWho) })
	within(t, "Cid shows Ann and Bob", 10*time.Second, func() (bool, string) { return showsWho(cid, annWho, bobWho) })
	for _, br := range []*Browser{ann, bob} {
		if info, _ := br.p2p(); info.Local != "" || info.Phase != "off" {
			t.Fatalf("%s: direct connection still open after the third joined: %+v", br.name, info)
		}
	}
	for _, br := range []*Browser{ann, bob, cid} {
		others := []string{}
		for _, w := range []who{annWho, bobWho, cidWho} {
			if w.Name != br.name {
				others = append(others, w.ID)
			}
		}
		within(t, br.name+" decodes both others through the SFU", 10*time.Second, func() (bool, string) { return rising(br, others) })
	}

	// The third leaves: P2P again, not before the hold, without a gap.
	ann.startSampler(t, bobWho)
	bob.startSampler(t, annWho)
	before, _ := ann.p2p()
	// Taken before Close: the server sees the leave while Close waits for the
	// browser to exit, up to a few hundred ms before Close returns.
	left := time.Now()
	cid.Close()
	within(t, "Ann gets a new P2P epoch", 20*time.Second, func() (bool, string) {
		info, err := ann.p2p()
		if err != nil {
			return false, err.Error()
		}
		return info.Epoch > before.Epoch, fmt.Sprintf("epoch %d, phase %s", info.Epoch, info.Phase)
	})
	if since := time.Since(left); since < room.P2PHold {
		t.Fatalf("P2P resumed %v after the third left, before the %v hold", since, room.P2PHold)
	}
	ann.inPhase(t, "direct", 15*time.Second)
	bob.inPhase(t, "direct", 5*time.Second)
	t.Logf("direct again %v after the third left", time.Since(left).Round(time.Millisecond))
	time.Sleep(time.Second)
	sa, sb = ann.stopSampler(t), bob.stopSampler(t)
	checkSwitch(t, "Ann's view of Bob, third leaves", sa)
	checkSwitch(t, "Bob's view of Ann, third leaves", sb)
	within(t, "Ann shows Bob directly", 5*time.Second, func() (bool, string) { return showsWhoDirect(ann, bob, bobWho) })
	within(t, "Bob shows Ann directly", 5*time.Second, func() (bool, string) { return showsWhoDirect(bob, ann, annWho) })
	videoPPS, _, _ = forwarding(t, srv, roomName, 3*time.Second)
	if videoPPS >= 30 {
		t.Fatalf("P2P mode again: the SFU forwards %.1f video packets/s, want < 30", videoPPS)
	}

	// The room setting off: the same two on the SFU, for comparison.
	if err := ann.eval(`window.podium.conference.session.send({type: 'room-settings', p2p: false}); true`, nil); err != nil {
		t.Fatal(err)
	}
	ann.inPhase(t, "off", 10*time.Second)
	bob.inPhase(t, "off", 5*time.Second)
	within(t, "Ann decodes Bob through the SFU", 10*time.Second, func() (bool, string) { return rising(ann, []string{bobWho.ID}) })
	within(t, "Ann shows Bob through the SFU", 5*time.Second, func() (bool, string) { return showsWho(ann, bobWho) })
	time.Sleep(2 * time.Second)
	sfuVideo, sfuAudio, cpuSFU := forwarding(t, srv, roomName, 5*time.Second)
	t.Logf("SFU mode: SFU forwards %.1f video, %.1f audio packets/s; server CPU %.1f %% of a core (P2P mode: %.1f %%)",
		sfuVideo, sfuAudio, cpuSFU*100, cpuP2P*100)
	if sfuVideo < 30 {
		t.Errorf("SFU mode: %.1f video packets/s forwarded; the P2P figure compares with nothing", sfuVideo)
	}
}

// checkSwitch fails on a gap over 500 ms in a switch's decoded video or audio,
// or on a sample without the right picture.
func checkSwitch(t *testing.T, what string, s switchSample) {
	t.Helper()
	checkGaps(t, what, s, 500)
}

// checkGaps is checkSwitch with the longest video gap allowed given.
func checkGaps(t *testing.T, what string, s switchSample, maxVideoGapMS float64) {
	t.Helper()
	b, _ := json.Marshal(s)
	t.Logf("%s: %s", what, b)
	if s.Samples < 10 {
		t.Errorf("%s: only %d samples", what, s.Samples)
	}
	if s.MaxVideoGapMS > maxVideoGapMS || s.MaxAudioGapMS > 500 {
		t.Errorf("%s: longest gap %.0f ms in video, %.0f ms in audio; want ≤ %.0f and ≤ 500", what, s.MaxVideoGapMS, s.MaxAudioGapMS, maxVideoGapMS)
	}
	if s.Bad > 0 {
		t.Errorf("%s: %d of %d samples without the right picture (%s)", what, s.Bad, s.Samples, s.BadDetail)
	}
}

// directVideo describes, for a failure's log, the page's video on its direct
// connection: what it received and decoded (inbound) and sent (outbound), and
// each remote tile's <video> elements: their state and whether their track is
// the direct connection's or the SFU's.
func (b *Browser) directVideo() string {
	var out string
	err := b.eval(`(async () => {
		const pc = window.podium && window.podium.conference && window.podium.conference.p2pPeerConnection;
		const parts = [];
		const direct = new Set();
		if (!pc) parts.push('no direct connection');
		else {
			parts.push('direct ' + pc.connectionState);
			for (const r of pc.getReceivers()) if (r.track) direct.add(r.track.id);
			(await pc.getStats()).forEach((v) => {
				if (v.kind !== 'video') return;
				if (v.type === 'inbound-rtp') parts.push('in: ' + (v.packetsReceived || 0) + ' packets, ' + (v.framesReceived || 0) +
					' frames received, ' + (v.framesDecoded || 0) + ' decoded, ' + (v.frameWidth || 0) + 'x' + (v.frameHeight || 0));
				if (v.type === 'outbound-rtp') parts.push('out: ' + (v.packetsSent || 0) + ' packets, ' + (v.framesEncoded || 0) +
					' frames encoded, ' + (v.frameWidth || 0) + 'x' + (v.frameHeight || 0));
			});
		}
		for (const tile of document.querySelectorAll('.tile[data-participant-id]:not(.local)')) {
			for (const v of tile.querySelectorAll('video')) {
				const t = v.srcObject && v.srcObject.getVideoTracks()[0];
				const from = !t ? 'no track' : (direct.has(t.id) ? 'direct' : 'SFU') + ' track ' + t.readyState + (t.muted ? ' muted' : '');
				parts.push('tile ' + tile.dataset.participantId + ': <video> ' + (v.hidden ? 'hidden ' : '') + 'readyState ' +
					v.readyState + ' ' + v.videoWidth + 'x' + v.videoHeight + (v.paused ? ' paused' : '') + ', ' + from);
			}
		}
		return parts.join('; ');
	})()`, &out)
	if err != nil {
		return b.name + ": " + err.Error()
	}
	return b.name + ": " + out
}

// showsWhoDirect is showsWho with, when it does not hold, both pages' direct
// video (directVideo) in the detail.
func showsWhoDirect(b, other *Browser, want ...who) (bool, string) {
	ok, detail := showsWho(b, want...)
	if ok {
		return true, ""
	}
	return false, detail + " | " + b.directVideo() + " | " + other.directVideo()
}
