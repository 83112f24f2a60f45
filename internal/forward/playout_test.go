package forward

import (
	"testing"
	"time"

	"github.com/pion/rtcp"

	"github.com/podium-sfu/podium/internal/algo/bwe"
)

const playoutID = 5

// TestPlayoutDelayAskedWhileRepairsCrossALongRoundTrip: a receiver that
// negotiated the playout-delay extension gets none until its losses are
// being repaired over a long round trip; then every video packet, resends
// included, asks the round trip and a margin (algo/playout), and its audio
// never carries it.
func TestPlayoutDelayAskedWhileRepairsCrossALongRoundTrip(t *testing.T) {
	l := NewLink(bwe.DefaultConfig())
	l.SetRTT(600 * time.Millisecond)
	rec := &recorder{}
	vup, aup := newVideoUp(t, nil), newAudioUp(t)
	v := NewDownTrack(vup, "r")
	v.SetLink(l)
	if _, err := v.Bind(videoContext(0xA, 0xB).withWriter(rec).withTWCC(twccID).withPlayoutDelay(playoutID)); err != nil {
		t.Fatal(err)
	}
	vup.AddDown(v)
	a := NewDownTrack(aup, "r")
	a.SetLink(l)
	if _, err := a.Bind(audioContext(0xC).withWriter(rec).withTWCC(twccID).withPlayoutDelay(playoutID)); err != nil {
		t.Fatal(err)
	}
	aup.AddDown(a)

	bigStream(t, vup, 10, 0)
	l.askPlayout(t0.Add(10 * time.Millisecond))
	for _, p := range rec.packets() {
		if p.hdr.GetExtension(playoutID) != nil {
			t.Fatal("playout delay asked before any repair")
		}
	}
	rec.reset()
	v.HandleRTCP(t0.Add(20*time.Millisecond), []rtcp.Packet{&rtcp.TransportLayerNack{SenderSSRC: 1, MediaSSRC: 0xA,
		Nacks: rtcp.NackPairsFromSequenceNumbers([]uint16{2, 3, 4})}})
	if s := l.Stats(); s.Retransmits != 3 || s.PlayoutDelay != 0 {
		t.Fatalf("after 3 NACKs: %d retransmissions, playout delay %v; want 3 and none yet", s.Retransmits, s.PlayoutDelay)
	}
	l.askPlayout(t0.Add(60 * time.Millisecond))
	if got := l.Stats().PlayoutDelay; got != 750*time.Millisecond {
		t.Fatalf("playout delay %v asked at a 600 ms RTT with repairs, want 750ms (RTT + 150 ms)", got)
	}
	rec.reset()
	feed(t, aup, rtpPacket(t, srcAudioSSRC, srcAudioPT, 1, 960, false, opusFrame), t0.Add(70*time.Millisecond))
	src := &video{t: t, seq: 10}
	feed(t, vup, src.next(append(vp8Layer(0, false), make([]byte, 100)...), true), t0.Add(80*time.Millisecond))
	v.HandleRTCP(t0.Add(90*time.Millisecond), []rtcp.Packet{&rtcp.TransportLayerNack{SenderSSRC: 1, MediaSSRC: 0xA,
		Nacks: rtcp.NackPairsFromSequenceNumbers([]uint16{5})}})
	kinds := map[string]int{}
	for _, p := range rec.packets() {
		ext := p.hdr.GetExtension(playoutID)
		switch {
		case p.hdr.SSRC == 0xC:
			kinds["audio"]++
			if ext != nil {
				t.Errorf("audio packet carries a playout delay % x", ext)
			}
		default:
			kinds[map[uint32]string{0xA: "video", 0xB: "resend"}[p.hdr.SSRC]]++
			if want := []byte{0x04, 0xb3, 0xe8}; string(ext) != string(want) {
				t.Errorf("video packet (SSRC %x) carries playout delay % x, want % x (least 750 ms, largest 10 s)", p.hdr.SSRC, ext, want)
			}
			if seq, ok := twccSeq(t, p.hdr); p.hdr.SSRC == 0xA && (!ok || seq == 0) {
				t.Errorf("video packet lost its transport-wide number beside the playout delay")
			}
		}
	}
	if kinds["audio"] != 1 || kinds["video"] != 1 || kinds["resend"] != 1 {
		t.Fatalf("written %v, want one audio, one video and one resent packet", kinds)
	}
}

// TestPlayoutDelayNotNegotiated: without the extension in the answer,
// nothing is added however lossy the path.
func TestPlayoutDelayNotNegotiated(t *testing.T) {
	l, vup, _, v, rec := linkedPair(t)
	l.SetRTT(600 * time.Millisecond)
	bigStream(t, vup, 10, 0)
	v.HandleRTCP(t0.Add(20*time.Millisecond), nacks(2, 3, 4))
	l.askPlayout(t0.Add(60 * time.Millisecond))
	rec.reset()
	src := &video{t: t, seq: 10}
	feed(t, vup, src.next(append(vp8Layer(0, false), make([]byte, 100)...), true), t0.Add(80*time.Millisecond))
	if len(rec.packets()) != 1 {
		t.Fatalf("%d packets written, want 1", len(rec.packets()))
	}
	for _, p := range rec.packets() {
		if len(p.hdr.Extensions) != 1 {
			t.Fatalf("%d extensions on a receiver that negotiated only transport-cc", len(p.hdr.Extensions))
		}
	}
}

// TestPlayoutDelayAskedFromThePathNotItsQueue: the delay is asked from the
// least round trip of the last seconds, without the queue. A round trip that
// a standing queue inflates on a short path (as behind a 128 kb/s cap) asks
// nothing while the window still holds the path's own; a long path asks as
// before. The retransmission window keeps the queue either way.
func TestPlayoutDelayAskedFromThePathNotItsQueue(t *testing.T) {
	tick := 50 * time.Millisecond
	tests := []struct {
		name            string
		before          time.Duration // ICE RTT for the first 5 s, no repairs
		rtt, fb, queue  time.Duration // then, with 3 repairs a second, for 8 s
		want            time.Duration
		wantRetransmitW time.Duration // the retransmission window's RTT then
	}{
		{"a queue behind a cap", 20 * time.Millisecond, 340 * time.Millisecond, 300 * time.Millisecond, 70 * time.Millisecond, 0, 370 * time.Millisecond},
		{"the queue estimate alone", 20 * time.Millisecond, 20 * time.Millisecond, 30 * time.Millisecond, 300 * time.Millisecond, 0, 320 * time.Millisecond},
		{"a long path", 600 * time.Millisecond, 600 * time.Millisecond, 610 * time.Millisecond, 5 * time.Millisecond, 750 * time.Millisecond, 605 * time.Millisecond},
		{"a path long for less than the window", 20 * time.Millisecond, 600 * time.Millisecond, 0, 0, 0, 600 * time.Millisecond},
	}
	for _, tt := range tests {
		l := NewLink(bwe.DefaultConfig())
		at := t0
		l.SetRTT(tt.before)
		for ; at.Before(t0.Add(5 * time.Second)); at = at.Add(tick) {
			l.askPlayout(at)
		}
		l.SetRTT(tt.rtt)
		l.fbRTT.Store(int64(tt.fb))
		l.queue.Store(int64(tt.queue))
		for i := 0; at.Before(t0.Add(13 * time.Second)); at, i = at.Add(tick), i+1 {
			if i%7 == 0 {
				l.stats.retransmits.Add(1)
			}
			l.askPlayout(at)
			if got := l.Stats().PlayoutDelay; got != tt.want && got != 0 {
				t.Fatalf("%s: asked %v at %v, want %v", tt.name, got, at.Sub(t0), tt.want)
			}
		}
		if got := l.Stats().PlayoutDelay; got != tt.want {
			t.Errorf("%s: asked %v, want %v", tt.name, got, tt.want)
		}
		if rtt, _ := l.retransmitWindow(); rtt != tt.wantRetransmitW {
			t.Errorf("%s: retransmission window's RTT %v, want %v (the queue kept)", tt.name, rtt, tt.wantRetransmitW)
		}
	}
}

// The tracker is fed on the link's timer tick: no allocation there.
func TestAskPlayoutDoesNotAllocate(t *testing.T) {
	l := NewLink(bwe.DefaultConfig())
	l.SetRTT(600 * time.Millisecond)
	at := t0
	if n := testing.AllocsPerRun(1000, func() {
		at = at.Add(50 * time.Millisecond)
		l.stats.retransmits.Add(1)
		l.askPlayout(at)
	}); n != 0 {
		t.Errorf("%v allocations an askPlayout, want 0", n)
	}
	if l.Stats().PlayoutDelay == 0 {
		t.Error("nothing asked: the loop did not reach the delay")
	}
}
