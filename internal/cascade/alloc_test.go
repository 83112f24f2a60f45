package cascade

import (
	"io"
	"testing"
	"time"

	"github.com/pion/rtp"
	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/forward"
	"github.com/podium-sfu/podium/internal/relay"
)

// The relay's per-packet path allocates nothing in steady state: the origin's
// writer sealing an RTP packet (audio with its level extension), and the
// subscriber queueing a relayed packet and its track reading it.
func TestRelayPathAllocs(t *testing.T) {
	rt, _ := nackCapture(t, 20*time.Millisecond)
	sub := rt.t
	w := &relayWriter{t: sub, stream: 1, ssrc: 1, levels: speaking(t).Levels(), store: newAudioStore(), counts: &resendCounters{}}
	addr := sub.Addr()
	w.addr.Store(&addr)
	hdr := rtp.Header{Version: 2, PayloadType: 111, SequenceNumber: 1, Timestamp: 960, SSRC: 1}
	payload := make([]byte, 160)
	if allocs := testing.AllocsPerRun(500, func() {
		hdr.SequenceNumber++
		if _, err := w.WriteRTP(&hdr, payload); err != nil {
			t.Fatal(err)
		}
	}); allocs != 0 {
		t.Errorf("origin: %.1f allocations per relayed packet", allocs)
	}
	if len(w.exts) != 1 {
		t.Error("the audio level extension was never written")
	}

	// The origin answering a NACK of relayed audio from its store.
	now := time.Now()
	sub.Peers().Learn(now, "sub", sub.Keyring().Sender(), sub.Keyring().Keys(now))
	o := &origin{cfg: Config{Relay: sub}, subs: map[subKey]*relayDown{{"sub", 1}: {w: w}}}
	// One packet a NACK: under the race detector sync.Pool drops a quarter of
	// what is put back, so each Send may allocate a buffer then (0.25 a run
	// rounds down to 0; three would not).
	nack := relay.AppendNACK(nil, []relay.NACKPair{{First: hdr.SequenceNumber - 3}})
	if allocs := testing.AllocsPerRun(500, func() {
		o.feedback(now, sub.Keyring().Sender(), 1, nack)
	}); allocs != 0 {
		t.Errorf("origin: %.1f allocations per NACK answered", allocs)
	}
	if got := o.resends.load().Audio; got < 500 {
		t.Errorf("resent %d audio packets, want one per NACK", got)
	}

	r := newRemotes(Config{Relay: sub}, nil)
	m := map[uint64]*remoteTrack{trackKey(7, 1): rt}
	r.dispatch.Store(&m)
	pkt := make([]byte, 1000)
	pkt[0] = 0x80
	buf := make([]byte, relay.MaxBody)
	seq := uint16(0)
	if allocs := testing.AllocsPerRun(500, func() {
		seq += 1 + seq%2 // every other packet lost: NACKs and retry timers too
		pkt[2], pkt[3] = byte(seq>>8), byte(seq)
		r.media(7, 1, pkt)
		if n, err := rt.read(buf); err != nil || n != len(pkt) {
			t.Fatalf("read %d, %v", n, err)
		}
	}); allocs != 0 && !raceEnabled {
		// Under the race detector the NACKs' pooled send buffers allocate
		// (2.0 a packet in CI): counted without it only.
		t.Errorf("subscriber: %.1f allocations per relayed packet", allocs)
	}
}

// speaking is an audio track that has read one packet at level 30 (-30 dBov).
func speaking(t *testing.T) *forward.UpTrack {
	t.Helper()
	p := rtp.Packet{Header: rtp.Header{Version: 2, PayloadType: 111, SequenceNumber: 1, SSRC: 1}, Payload: make([]byte, 20)}
	if err := p.Header.SetExtension(1, []byte{30}); err != nil {
		t.Fatal(err)
	}
	raw, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	read := false
	up := forward.NewUpTrack(forward.UpTrackParams{Source: "a", Kind: webrtc.RTPCodecTypeAudio, SSRC: 1,
		Codec: webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeOpus, ClockRate: 48000}, AudioLevelExtID: 1,
		Read: func(b []byte) (int, error) {
			if read {
				return 0, io.EOF
			}
			read = true
			return copy(b, raw), nil
		}})
	up.Run()
	if l, ok := up.Levels().Latest(); !ok || l.Raw != 30 {
		t.Fatalf("level %+v %v", l, ok)
	}
	return up
}
