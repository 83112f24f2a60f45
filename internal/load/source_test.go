package load

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/podium-sfu/podium/internal/clip"
	"github.com/podium-sfu/podium/internal/media"
)

// sent is one packet a fake connection got.
type sent struct {
	stream int
	at     time.Time
	p      outPacket
	vp8    media.VP8Descriptor
}

type fakeOut struct {
	now  *time.Time
	pkts []sent
}

func (f *fakeOut) writeRTP(stream int, p *outPacket) error {
	s := sent{stream: stream, at: *f.now, p: *p}
	s.p.Payload = slices.Clone(p.Payload)
	if stream >= 0 {
		if err := media.ParseVP8(s.p.Payload, &s.vp8); err != nil {
			panic(err)
		}
	}
	f.pkts = append(f.pkts, s)
	return nil
}

func (f *fakeOut) of(stream int) []sent {
	var out []sent
	for _, s := range f.pkts {
		if s.stream == stream {
			out = append(out, s)
		}
	}
	return out
}

func (f *fakeOut) framesOf(stream int) [][]sent {
	var frames [][]sent
	var cur []sent
	for _, s := range f.of(stream) {
		cur = append(cur, s)
		if s.p.Marker {
			frames = append(frames, cur)
			cur = nil
		}
	}
	return frames
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// harness drives a source with a fake clock in 1 ms steps.
type harness struct {
	t   *testing.T
	now time.Time
	src *source
	out *fakeOut
}

func newHarness(t *testing.T, spec ParticipantSpec, dtx bool) *harness {
	t.Helper()
	cfg, err := spec.sourceConfig(dtx)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, now: t0}
	h.out = &fakeOut{now: &h.now}
	h.src = newSource(cfg, t0, rand.New(rand.NewPCG(1, 2)))
	h.src.bind(h.out)
	return h
}

// run advances the clock by d, ticking whenever the source is due before the end.
func (h *harness) run(d time.Duration) {
	end := h.now.Add(d)
	for {
		next := h.src.next()
		if !next.Before(end) {
			h.now = end
			return
		}
		if next.After(h.now) {
			h.now = next
		}
		h.src.tick(h.now)
	}
}

func TestAudioEvery20msWithLevels(t *testing.T) {
	h := newHarness(t, ParticipantSpec{Audio: true}, false)
	h.src.setSpeaking(true)
	h.run(time.Second)
	pkts := h.out.of(audioStream)
	if len(pkts) != 50 {
		t.Fatalf("%d audio packets in 1 s, want 50", len(pkts))
	}
	speech, _ := clip.LoadAudio(clip.Speech)
	for i, s := range pkts {
		if i > 0 {
			prev := pkts[i-1]
			if s.p.Seq != prev.p.Seq+1 || s.p.TS != prev.p.TS+960 || s.at.Sub(prev.at) != 20*time.Millisecond {
				t.Fatalf("packet %d: seq %d ts %d at +%v after seq %d ts %d", i, s.p.Seq, s.p.TS, s.at.Sub(prev.at), prev.p.Seq, prev.p.TS)
			}
		}
		if s.p.Level < 0 || s.p.Level > 127 || len(s.p.Payload) == 0 {
			t.Fatalf("packet %d: level %d, %d bytes", i, s.p.Level, len(s.p.Payload))
		}
		if s.p.Marker != (i == 0) {
			t.Errorf("packet %d: marker %v; only a talkspurt's first packet has it", i, s.p.Marker)
		}
		if !slices.ContainsFunc(speech.Packets, func(b []byte) bool { return slices.Equal(b, s.p.Payload) }) {
			t.Fatalf("packet %d is not from the speech clip", i)
		}
	}
	h.src.setSpeaking(false)
	h.run(time.Second)
	quiet := h.out.of(audioStream)[50:]
	for _, s := range quiet {
		if s.p.Level < 70 {
			t.Fatalf("a silent participant sends level %d (−dBov), want room noise (≥ 70)", s.p.Level)
		}
	}
	if len(quiet) != 50 {
		t.Errorf("%d packets while silent without DTX, want 50", len(quiet))
	}
}

func TestDTXWhileSilent(t *testing.T) {
	h := newHarness(t, ParticipantSpec{Audio: true}, true)
	h.src.setSpeaking(true)
	h.run(time.Second)
	h.src.setSpeaking(false)
	h.run(2 * time.Second)
	h.src.setSpeaking(true)
	h.run(100 * time.Millisecond)
	pkts := h.out.of(audioStream)
	// 50 speaking, 10 of hangover, then one per 400 ms (5 in 1.8 s), then 5 speaking.
	if got, want := len(pkts), 50+10+4+5; got < want || got > want+1 {
		t.Errorf("%d packets, want %d", got, want)
	}
	last := pkts[len(pkts)-5]
	if !last.p.Marker {
		t.Error("the first packet of the new talkspurt lacks the marker bit")
	}
	// Timestamps keep counting 20 ms slots across the gaps; sequence numbers do not skip.
	for i := 1; i < len(pkts); i++ {
		if pkts[i].p.Seq != pkts[i-1].p.Seq+1 {
			t.Fatalf("sequence gap at packet %d", i)
		}
		slots := pkts[i].at.Sub(pkts[i-1].at) / (20 * time.Millisecond)
		if pkts[i].p.TS-pkts[i-1].p.TS != uint32(slots)*960 {
			t.Fatalf("packet %d: timestamp step %d for %d slots", i, pkts[i].p.TS-pkts[i-1].p.TS, slots)
		}
	}
}

func TestSimulcastVideoPacingAndPacketization(t *testing.T) {
	h := newHarness(t, ParticipantSpec{Video: VideoSimulcast}, false)
	h.run(4*time.Second - time.Millisecond) // a frame lasts 33.333333 ms: the 121st starts just before 4 s
	for enc, name := range []string{clip.Video180p, clip.Video360p, clip.Video720p} {
		c, _ := clip.LoadVideo(name)
		frames := h.out.framesOf(enc)
		if len(frames) != 120 {
			t.Fatalf("encoding %d: %d frames in 4 s, want 120", enc, len(frames))
		}
		if !frames[0][0].vp8.IsKeyframe() {
			t.Errorf("encoding %d does not start with a keyframe", enc)
		}
		bytes := 0
		for i, f := range frames {
			first := f[0]
			if i > 0 {
				prev := frames[i-1][0]
				if d := first.at.Sub(prev.at); d < 33*time.Millisecond || d > 34*time.Millisecond {
					t.Fatalf("encoding %d frame %d: %v after the previous", enc, i, d)
				}
				if first.p.TS-prev.p.TS != 3000 {
					t.Fatalf("encoding %d frame %d: timestamp step %d, want 3000", enc, i, first.p.TS-prev.p.TS)
				}
				if first.vp8.PictureID != (prev.vp8.PictureID+1)&0x7fff {
					t.Fatalf("encoding %d frame %d: picture id %d after %d", enc, i, first.vp8.PictureID, prev.vp8.PictureID)
				}
				wantTL0 := prev.vp8.TL0PICIDX
				if first.vp8.TID == 0 {
					wantTL0++
				}
				if first.vp8.TL0PICIDX != wantTL0 {
					t.Fatalf("encoding %d frame %d: TL0PICIDX %d, want %d", enc, i, first.vp8.TL0PICIDX, wantTL0)
				}
			}
			if want := c.Frames[i%len(c.Frames)]; first.vp8.TID != want.TID || first.vp8.LayerSync != want.Sync {
				t.Fatalf("encoding %d frame %d: TID %d Y %v, want %d %v", enc, i, first.vp8.TID, first.vp8.LayerSync, want.TID, want.Sync)
			}
			for k, s := range f {
				if len(s.p.Payload) > maxPayload {
					t.Fatalf("encoding %d frame %d: a %d-byte payload", enc, i, len(s.p.Payload))
				}
				if s.vp8.Start != (k == 0) || s.p.TS != first.p.TS || s.vp8.PictureID != first.vp8.PictureID {
					t.Fatalf("encoding %d frame %d packet %d: start %v ts %d pid %d", enc, i, k, s.vp8.Start, s.p.TS, s.vp8.PictureID)
				}
				if k > 0 && s.p.Seq != f[k-1].p.Seq+1 {
					t.Fatalf("encoding %d frame %d: sequence gap", enc, i)
				}
				bytes += len(s.p.Payload) - s.vp8.HeaderLen
			}
		}
		if kbps, want := bytes*8/4/1000, c.Bitrate()/1000; kbps < want*95/100 || kbps > want*105/100 {
			t.Errorf("encoding %d: %d kb/s of VP8, the clip has %d", enc, kbps, want)
		}
	}
}

func TestKeyframeRequestJumpsToTheNextKeyframe(t *testing.T) {
	h := newHarness(t, ParticipantSpec{Video: VideoSimulcast}, false)
	h.run(300 * time.Millisecond) // 10 frames: the clip's next keyframe is frame 40
	h.src.keyframeRequest(1)
	before := len(h.out.framesOf(1))
	h.run(40 * time.Millisecond)
	frames := h.out.framesOf(1)
	next := frames[before][0]
	if !next.vp8.IsKeyframe() {
		t.Fatal("the frame after a keyframe request is not a keyframe")
	}
	c, _ := clip.LoadVideo(clip.Video360p)
	if want := c.Frames[40].Data; !slices.Equal(next.p.Payload[next.vp8.HeaderLen:], want[:len(next.p.Payload)-next.vp8.HeaderLen]) {
		t.Error("the keyframe sent is not the clip's next keyframe (frame 40)")
	}
	if other := h.out.framesOf(0); other[len(other)-1][0].vp8.IsKeyframe() {
		t.Error("a keyframe request for one encoding made another send a keyframe")
	}
	if got := h.src.stats.KeyframeRequests.Load(); got != 1 {
		t.Errorf("%d keyframe requests counted", got)
	}
}

func TestNACKAnsweredFromCache(t *testing.T) {
	h := newHarness(t, ParticipantSpec{Video: VideoSingle}, false)
	h.run(time.Second)
	orig := h.out.of(0)
	target := orig[len(orig)-20]
	n := len(h.out.pkts)
	h.src.nack(0, []uint16{target.p.Seq, target.p.Seq + 10000}, h.now)
	resent := h.out.pkts[n:]
	if len(resent) != 1 {
		t.Fatalf("%d packets resent for one cached and one unknown sequence number", len(resent))
	}
	r := resent[0]
	if !r.p.RTX || r.p.Seq != target.p.Seq || r.p.TS != target.p.TS || r.p.Marker != target.p.Marker || !slices.Equal(r.p.Payload, target.p.Payload) {
		t.Errorf("resent %+v, want the original %+v as RTX", r.p, target.p)
	}
	// A repeated NACK right away is a duplicate of the same loss.
	h.src.nack(0, []uint16{target.p.Seq}, h.now.Add(time.Millisecond))
	if len(h.out.pkts) != n+1 {
		t.Error("a NACK repeated within 5 ms was answered again")
	}
	h.now = h.now.Add(20 * time.Millisecond)
	h.src.nack(0, []uint16{target.p.Seq}, h.now)
	if len(h.out.pkts) != n+2 {
		t.Error("a later NACK for the same packet was not answered")
	}
	if h.src.stats.NACKed.Load() != 4 || h.src.stats.Retransmitted.Load() != 2 {
		t.Errorf("counted %d NACKed, %d retransmitted", h.src.stats.NACKed.Load(), h.src.stats.Retransmitted.Load())
	}
}

func TestPauseAndLayers(t *testing.T) {
	h := newHarness(t, ParticipantSpec{Audio: true, Video: VideoSimulcast}, false)
	h.run(500 * time.Millisecond)
	h.src.setPaused(true)
	n := len(h.out.of(1))
	audio := len(h.out.of(audioStream))
	h.run(time.Second)
	if got := len(h.out.of(1)); got != n {
		t.Errorf("%d video packets sent while paused", got-n)
	}
	if got := len(h.out.of(audioStream)) - audio; got != 50 {
		t.Errorf("%d audio packets while video paused, want 50", got)
	}
	h.src.setPaused(false)
	h.src.setLayers([]string{"h"})
	before := [3]int{len(h.out.framesOf(0)), len(h.out.framesOf(1)), len(h.out.framesOf(2))}
	h.run(time.Second)
	if got := len(h.out.framesOf(0)) - before[0]; got != 0 {
		t.Errorf("q sent %d frames while only h is wanted", got)
	}
	if got := len(h.out.framesOf(2)) - before[2]; got != 0 {
		t.Errorf("f sent %d frames while only h is wanted", got)
	}
	h1 := h.out.framesOf(1)
	if len(h1)-before[1] != 30 || !h1[before[1]][0].vp8.IsKeyframe() {
		t.Errorf("h after resume: %d frames, first keyframe %v; want 30 starting with a keyframe", len(h1)-before[1], h1[before[1]][0].vp8.IsKeyframe())
	}
	h.src.setLayers([]string{"h", "f"})
	before[2] = len(h.out.framesOf(2))
	h.run(100 * time.Millisecond)
	if f := h.out.framesOf(2); len(f) == before[2] || !f[before[2]][0].vp8.IsKeyframe() {
		t.Error("f turned on again does not start with a keyframe")
	}
	if got := h.src.activeRIDs(); !slices.Equal(got, []string{"h", "f"}) {
		t.Errorf("active %v", got)
	}
}

func TestLateSourceSkipsInsteadOfBursting(t *testing.T) {
	h := newHarness(t, ParticipantSpec{Audio: true, Video: VideoSingle}, false)
	h.run(100 * time.Millisecond)
	n := len(h.out.pkts)
	h.now = h.now.Add(2 * time.Second) // the process stalled
	h.src.tick(h.now)
	burst := h.out.pkts[n:]
	audio, frames := 0, 0
	for _, s := range burst {
		if s.stream == audioStream {
			audio++
		} else if s.p.Marker {
			frames++
		}
	}
	if audio > 11 || frames > 7 {
		t.Errorf("after a 2 s stall: a burst of %d audio packets and %d frames, want at most 200 ms worth (11, 7)", audio, frames)
	}
}

func TestUnboundSourceSendsNothing(t *testing.T) {
	h := newHarness(t, ParticipantSpec{Audio: true, Video: VideoSingle}, false)
	h.src.bind(nil)
	h.run(time.Second)
	if len(h.out.pkts) != 0 {
		t.Errorf("%d packets without a connection", len(h.out.pkts))
	}
	h.src.bind(h.out)
	h.run(100 * time.Millisecond)
	if f := h.out.framesOf(0); len(f) == 0 || !f[0][0].vp8.IsKeyframe() {
		t.Error("a new connection does not start with a keyframe")
	}
}
