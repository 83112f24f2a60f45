package cascade

import (
	"encoding/binary"
	"slices"
	"testing"
	"time"

	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/relay"
)

// nackCapture is a subscriber's track whose feedback goes to an origin
// transport that records the NACKed sequence numbers.
func nackCapture(t *testing.T, rtt time.Duration) (*remoteTrack, chan []uint16) {
	t.Helper()
	cfg := relay.TransportConfig{Listen: "127.0.0.1:0", Lead: time.Second, Grace: time.Minute}
	sub, err := relay.Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	origin, err := relay.Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Close(); _ = origin.Close() })
	origin.Peers().Learn(time.Now(), "sub", sub.Keyring().Sender(), sub.Keyring().Keys(time.Now()))
	got := make(chan []uint16, 16)
	origin.SetHandler(func(_ uint32, kind relay.Kind, _ uint32, body []byte) {
		var fb relay.Feedback
		if kind != relay.KindFeedback || relay.ParseFeedback(body, &fb) != nil || fb.Type != relay.FeedbackNACK {
			return
		}
		var seqs []uint16
		for _, p := range fb.NACKs {
			p.Lost(func(s uint16) { seqs = append(seqs, s) })
		}
		slices.Sort(seqs)
		got <- seqs
	})
	b := &bridge{}
	addr := origin.Addr()
	b.addr.Store(&addr)
	b.rtt.Store(int64(rtt))
	rt := newRemoteTrack(sub, b, rosterTrack{Stream: 1, Source: "a", Kind: webrtc.RTPCodecTypeVideo.String(),
		Codec: webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeVP8, ClockRate: 90000}})
	return rt, got
}

func rtpSeq(seq uint16) []byte {
	b := make([]byte, 20)
	b[0] = 0x80
	binary.BigEndian.PutUint16(b[2:], seq)
	return b
}

func expectNACK(t *testing.T, got chan []uint16, want ...uint16) {
	t.Helper()
	select {
	case seqs := <-got:
		if !slices.Equal(seqs, want) {
			t.Fatalf("NACKed %v, want %v", seqs, want)
		}
	case <-time.After(2 * time.Second):
		t.Fatalf("no NACK, want %v", want)
	}
}

func expectNone(t *testing.T, got chan []uint16) {
	t.Helper()
	select {
	case seqs := <-got:
		t.Fatalf("NACKed %v, want nothing", seqs)
	case <-time.After(50 * time.Millisecond):
	}
}

// Gaps are NACKed at once; what is still missing a round trip later is asked
// for again, up to three times in all; what arrives is not; a gap longer than
// nackSpan is left to keyframes; sequence numbers wrap.
func TestGapNACKs(t *testing.T) {
	rt, got := nackCapture(t, 40*time.Millisecond)
	t0 := time.Unix(1000, 0)
	rt.gap(t0, rtpSeq(65533))
	rt.gap(t0, rtpSeq(65534))
	expectNone(t, got)
	rt.gap(t0, rtpSeq(2)) // 65535, 0, 1 lost across the wrap
	expectNACK(t, got, 0, 1, 65535)
	rt.gap(t0.Add(10*time.Millisecond), rtpSeq(0)) // repaired
	expectNone(t, got)
	rt.gap(t0.Add(30*time.Millisecond), rtpSeq(3)) // within the round trip: no retry
	expectNone(t, got)
	rt.gap(t0.Add(60*time.Millisecond), rtpSeq(4)) // 1.25 RTT later: the rest again
	expectNACK(t, got, 1, 65535)
	rt.gap(t0.Add(120*time.Millisecond), rtpSeq(5))
	expectNACK(t, got, 1, 65535) // third and last try
	rt.gap(t0.Add(200*time.Millisecond), rtpSeq(6))
	expectNone(t, got)
	rt.gap(t0.Add(200*time.Millisecond), rtpSeq(6+nackSpan+1)) // an outage
	expectNone(t, got)
}
