package room

import (
	"encoding/binary"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/algo/alloc"
	"github.com/podium-sfu/podium/internal/algo/bwe"
	"github.com/podium-sfu/podium/internal/forward"
	"github.com/podium-sfu/podium/internal/signal"
)

// joinLinked joins a receiver whose connection has congestion control.
func (f *fixture) joinLinked(id string, cfg bwe.Config) *fakeMember {
	f.t.Helper()
	m := newFake(id)
	m.link = forward.NewLink(cfg)
	if _, _, err := f.hub.Join("r", m, signal.Participant{ID: id, Name: id}); err != nil {
		f.t.Fatal(err)
	}
	f.members[id] = m
	return m
}

// encodingUp is one simulcast encoding of source's video; read feeds it (nil:
// nothing arrives).
func encodingUp(source, rid string, read func([]byte) (int, error)) *forward.UpTrack {
	return forward.NewUpTrack(forward.UpTrackParams{
		Source: source, Kind: webrtc.RTPCodecTypeVideo, SSRC: 7, RID: rid, Encoding: EncodingIndex(rid),
		Codec:               webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeVP8},
		SendKeyframeRequest: func(uint32) error { return nil },
		Read:                read,
	})
}

// With bandwidth adaptation, a receiver that shows a source large keeps the
// encodings below that one on at the sender: they are where a degrading link
// moves it at once. It is told what is suspended and how its downlink fares.
func TestLowerEncodingsStayOnUnderBandwidthAdaptation(t *testing.T) {
	f := newFixture(t, Settings{LastN: -1, VideoPausing: true})
	pub := f.join("pub", false)
	viewer := f.joinLinked("viewer", bwe.DefaultConfig())
	q := encodingUp("pub", "q", nil)
	start := time.Now()
	f.room.DeclareEncodings(pub, []string{"q", "h", "f"})
	f.room.Publish(pub, q)
	f.room.SetConstraints(viewer, map[string]signal.VideoConstraint{"pub": {Width: 1280, Height: 720, Role: "stage"}})
	f.room.do(func(s *state) { s.maintainLayers(start.Add(layerOffDelay + time.Second)) })
	if got, _ := pub.last(signal.TypeLayers); got != `{"active":["q","h","f"]}` {
		t.Errorf("layers %q, want q, h and f all kept on", got)
	}
	if got, _ := viewer.last(signal.TypeSuspended); got != `{"ids":[]}` {
		t.Errorf("suspended %q, want an empty list", got)
	}
	if got, _ := viewer.last(signal.TypeStats); !strings.Contains(got, `"estimate":1000000`) || !strings.Contains(got, `"switches":0`) ||
		!strings.Contains(got, `"pub":{"encoding":2`) {
		t.Errorf("stats %q, want the start estimate, no switch, and pub on encoding 2 (nothing sends yet: the one it shows)", got)
	}
}

// vp8Packet is a minimal VP8 RTP packet of size bytes: a frame's first packet,
// a keyframe (320x180) or not.
func vp8Packet(seq uint16, ts uint32, key bool, size int) []byte {
	if key {
		return vp8Keyframe(seq, ts, 320, 180, size)
	}
	b := vp8Header(seq, ts, size)
	copy(b[12:], []byte{0x10, 0x51, 0x12, 0x00, 0xaa})
	return b
}

// vp8Keyframe is the first packet of a width×height VP8 keyframe, size bytes.
func vp8Keyframe(seq uint16, ts uint32, width, height, size int) []byte {
	b := vp8Header(seq, ts, size)
	copy(b[12:], []byte{0x10, 0x50, 0x42, 0x00, 0x9d, 0x01, 0x2a,
		byte(width), byte(width >> 8), byte(height), byte(height >> 8)})
	return b
}

func vp8Header(seq uint16, ts uint32, size int) []byte {
	b := make([]byte, size)
	b[0], b[1] = 0x80, 0x80|96
	binary.BigEndian.PutUint16(b[2:], seq)
	binary.BigEndian.PutUint32(b[4:], ts)
	binary.BigEndian.PutUint32(b[8:], 7)
	return b
}

// A receiver whose estimate cannot carry even the lowest layer has the video
// suspended and is told so (suspended, stats); when its estimate recovers the
// video comes back after the allocator's dwell.
func TestSuspendedForBandwidth(t *testing.T) {
	f := newFixture(t, Settings{LastN: -1, VideoPausing: true})
	pub := f.join("pub", false)
	cfg := bwe.DefaultConfig()
	cfg.StartBitrate = cfg.MinBitrate // a receiver whose link carries next to nothing
	viewer := f.joinLinked("viewer", cfg)
	pkts := make(chan []byte)
	q := encodingUp("pub", "q", func(b []byte) (int, error) {
		p, ok := <-pkts
		if !ok {
			return 0, io.EOF
		}
		return copy(b, p), nil
	})
	f.room.Publish(pub, q)
	go q.Run()
	// A 30 fps stream of 500-byte frames (about 120 kb/s) for the whole test.
	stop := make(chan struct{})
	fed := make(chan struct{})
	go func() {
		defer close(fed)
		defer close(pkts)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case pkts <- vp8Packet(uint16(i), uint32(i*3000), i == 0, 500):
			}
			time.Sleep(33 * time.Millisecond)
		}
	}()
	defer func() { close(stop); <-fed }()

	// The stream's measured rate ramps up over its 2 s window, so it first fits
	// and plays; once it needs over twice the budget it is suspended after
	// SuspendFarBelowAfter (3 s).
	suspended := func() string { got, _ := viewer.last(signal.TypeSuspended); return got }
	deadline := time.Now().Add(7 * time.Second)
	for suspended() != `{"ids":["pub"]}` {
		if time.Now().After(deadline) {
			t.Fatalf("suspended %q after 7 s at 30 kb/s, want pub", suspended())
		}
		time.Sleep(50 * time.Millisecond)
	}
	// stats follows within its 1 s period.
	deadline = time.Now().Add(1500 * time.Millisecond)
	for {
		got, _ := viewer.last(signal.TypeStats)
		if strings.Contains(got, `"estimate":30000`) && strings.Contains(got, `"pub":{"encoding":-1`) && strings.Contains(got, `"suspended":true`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stats %q, want the 30 kb/s estimate and pub suspended", got)
		}
		time.Sleep(50 * time.Millisecond)
	}

	var down *forward.DownTrack
	viewer.mu.Lock()
	for d := range viewer.downs {
		if d.Kind() == webrtc.RTPCodecTypeVideo {
			down = d
		}
	}
	viewer.mu.Unlock()
	// A REMB of 5 Mb/s sets the estimate (no transport-wide feedback here).
	down.HandleRTCP(time.Now(), []rtcp.Packet{&rtcp.ReceiverEstimatedMaximumBitrate{Bitrate: 5_000_000}})
	deadline = time.Now().Add(5 * time.Second)
	for suspended() != `{"ids":[]}` {
		if time.Now().After(deadline) {
			t.Fatalf("suspended %q 5 s after the estimate rose to 5 Mb/s, want none", suspended())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A receiver that shows a video small, while the sender's top encoding is off
// because nobody shows it large, keeps the estimate probed to what enlarging it
// would cost: the other videos as allocated, that video's top encoding at its
// last measured rate, audio, and the allocator's upgrade margin.
func TestProbeTargetCoversEnlargingAVideo(t *testing.T) {
	const audio, margin = 70_000, 0.05
	small := alloc.Source{ID: "small", Layers: []alloc.Layer{
		{Width: 320, Height: 180, Active: true, Bitrate: [3]int{80_000, 120_000, 200_000}},
		{Width: 640, Height: 360, Bitrate: [3]int{140_000, 210_000, 350_000}},
		{Width: 1280, Height: 720, Bitrate: [3]int{360_000, 540_000, 900_000}}, // off, last measured
	}}
	staged := alloc.Source{ID: "staged", Layers: []alloc.Layer{
		{Width: 320, Height: 180, Active: true, Bitrate: [3]int{80_000, 120_000, 200_000}},
		{Width: 640, Height: 360, Active: true, Bitrate: [3]int{140_000, 210_000, 350_000}},
	}}
	sources := []alloc.Source{small, staged}
	out := []alloc.Allocation{{ID: "small", Bitrate: 200_000}, {ID: "staged", Encoding: 1, MaxTemporal: 2, Bitrate: 350_000}}

	// Nothing held back (the allocator's desire is 0): probe for the enlargement.
	want := audio + int(float64(350_000+900_000)*(1+margin))
	if got := probeTarget(0, audio, sources, out, margin); got != want {
		t.Errorf("probe target %d, want %d (staged 350k + small's top 900k, +5 %%, + audio)", got, want)
	}
	// The allocator's own desire wins when larger.
	if got := probeTarget(5_000_000, audio, sources, out, margin); got != 5_000_000 {
		t.Errorf("probe target %d, want the allocator's 5000000", got)
	}
	// Every video already on the largest encoding it has: nothing to probe for.
	out[0].Bitrate = 900_000
	if got := probeTarget(0, audio, sources, out, margin); got != 0 {
		t.Errorf("probe target %d with every video at its top, want 0", got)
	}
}

// runningEncoding is source's encoding rid, running on the packets next returns
// every period (nil: no more, the encoding stops) until the test ends.
func runningEncoding(t *testing.T, source, rid string, next func(i int) []byte, every time.Duration) *forward.UpTrack {
	pkts := make(chan []byte)
	stop := make(chan struct{})
	fed := make(chan struct{})
	up := encodingUp(source, rid, func(b []byte) (int, error) {
		p, ok := <-pkts
		if !ok {
			return 0, io.EOF
		}
		return copy(b, p), nil
	})
	go up.Run()
	go func() {
		defer close(fed)
		defer close(pkts)
		// Paced to a schedule, not by sleeping after each send: on a busy
		// box (the race detector, parallel packages) the sleeps' overshoot
		// added up to less than half the nominal rate, and tests that need
		// two videos not to fit then saw them fit.
		due := time.Now()
		for i := 0; ; i++ {
			p := next(i)
			if p == nil {
				<-stop
				return
			}
			select {
			case <-stop:
				return
			case pkts <- p:
			}
			due = due.Add(every)
			if wait := time.Until(due); wait > 0 {
				time.Sleep(wait)
			} else if wait < -200*time.Millisecond {
				due = time.Now() // too far behind to catch up: start again from now
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-fed })
	return up
}

// A receiver that enlarges a video whose top encoding the sender had switched
// off is pointed at that encoding as soon as the sender is told to switch it
// back on: its first frame, a keyframe, is then the switch. If it does not come
// within resumeGrace, the receiver is pointed back at what flows.
func TestEnlargedVideoPointsAtTheResumingEncoding(t *testing.T) {
	f := newFixture(t, Settings{LastN: -1, VideoPausing: true})
	pub := f.join("pub", false)
	viewer := f.joinLinked("viewer", bwe.DefaultConfig())
	f.room.DeclareEncodings(pub, []string{"q", "h", "f"})
	q := runningEncoding(t, "pub", "q", func(i int) []byte { return vp8Packet(uint16(i), uint32(i*3000), i == 0, 300) }, 33*time.Millisecond)
	// f ran long enough for its rate to be measured over a full window (about
	// 240 kb/s), then the sender switched it off. (An encoding never measured
	// counts at the nominal 2.5 Mb/s, more than this receiver's 1 Mb/s.)
	const fFrames = 80
	full := runningEncoding(t, "pub", "f", func(i int) []byte {
		if i == fFrames {
			return nil
		}
		return vp8Keyframe(uint16(i), uint32(i*3000), 1280, 720, 1000) // nobody wants it: not parsed
	}, 33*time.Millisecond)
	f.room.Publish(pub, q)
	f.room.Publish(pub, full)
	f.room.SetConstraints(viewer, map[string]signal.VideoConstraint{"pub": {Width: 320, Height: 180, Role: "thumbnail"}})
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if full.Stats().Packets.Load() == fFrames && !full.Active(time.Now(), activeWindow) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("f's frames were not read")
		}
	}
	target := func() (target int) {
		f.room.do(func(s *state) {
			target, _ = s.members["viewer"].videoDowns()["pub"].Layers()
		})
		return target
	}
	f.room.do(func(s *state) {
		// h and f unneeded for long, and told off.
		sc := &s.members["pub"].simulcast
		sc.lastNeeded[1], sc.lastNeeded[2] = time.Time{}, time.Time{}
		s.members["pub"].layersSent = []string{"q"}
		s.maintainLayers(time.Now())
	})
	if got := target(); got != 0 {
		t.Fatalf("target %d while shown small, want 0", got)
	}

	f.room.SetConstraints(viewer, map[string]signal.VideoConstraint{"pub": {Width: 1280, Height: 720, Role: "stage"}})
	if got, _ := pub.last(signal.TypeLayers); got != `{"active":["q","h","f"]}` {
		t.Fatalf("layers %q after the viewer enlarged it, want f back on", got)
	}
	if got := target(); got != 2 {
		t.Errorf("target %d right after the viewer enlarged it, want 2 (f, switched back on)", got)
	}
	time.Sleep(resumeGrace + 100*time.Millisecond)
	f.room.do(func(s *state) { s.maintainLayers(time.Now()) })
	if got := target(); got != 0 {
		t.Errorf("target %d after f did not come back within %v, want 0 (what flows)", got, resumeGrace)
	}
}

// The admin API shows the break ceilings in force, and only those.
func TestHeldCeilingsListsOnlyThoseInForce(t *testing.T) {
	bw := newBandwidthState()
	if got := bw.heldCeilings(); got != nil {
		t.Fatalf("no ceilings yet: %v", got)
	}
	t0 := time.Unix(1000, 0)
	held, free := &alloc.BreakCeiling{}, &alloc.BreakCeiling{}
	for _, c := range []*alloc.BreakCeiling{held, free} {
		c.Update(t0, 0, 2, true, false)
	}
	held.Update(t0.Add(time.Second), 1, 2, true, false) // a break on the top encoding of a crowded path
	bw.ceilings["a"], bw.ceilings["b"] = held, free
	got := bw.heldCeilings()
	if len(got) != 1 || got["a"] != 1 {
		t.Fatalf("held ceilings %v, want a: 1 alone", got)
	}
	held.Update(t0.Add(2*time.Second), 1, 1, false, true) // the path cleared
	if got := bw.heldCeilings(); got != nil {
		t.Fatalf("after the path cleared: %v, want none", got)
	}
}
