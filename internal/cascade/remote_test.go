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
	sub, origin := relayPair(t)
	origin.Peers().Learn(time.Now(), "sub", sub.Keyring().Sender(), sub.Keyring().Keys(time.Now()))
	got := make(chan []uint16, 16)
	origin.SetHandler(func(_ uint32, kind relay.Kind, _ uint32, body []byte) {
		if len(got) == cap(got) {
			// Nobody reads them (TestRelayPathAllocs): decoding them
			// would allocate on the origin's reader, in the same process
			// as the subscriber's allocation count (1.0 a packet in a CI
			// run on a loaded box, where the loop ran long enough for
			// the NACKs to come back during it).
			return
		}
		var fb relay.Feedback
		if kind != relay.KindFeedback || relay.ParseFeedback(body, &fb) != nil || fb.Type != relay.FeedbackNACK {
			return
		}
		var seqs []uint16
		for _, p := range fb.NACKs {
			p.Lost(func(s uint16) { seqs = append(seqs, s) })
		}
		slices.Sort(seqs)
		select {
		case got <- seqs:
		default:
		}
	})
	b := &bridge{}
	addr := origin.Addr()
	b.addr.Store(&addr)
	b.rtt.Store(int64(rtt))
	rt := newRemoteTrack(sub, b, rosterTrack{Stream: 1, Source: "a", Kind: webrtc.RTPCodecTypeVideo.String(),
		Codec: webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeVP8, ClockRate: 90000}}, &repairCounters{})
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

// A relayed stream whose packets pause (DTX: one every 400 ms) still asks
// again in time for what it misses: the track's reader retries on a timer,
// not only when a packet comes.
func TestRetriesWithoutPackets(t *testing.T) {
	rt, got := nackCapture(t, 40*time.Millisecond)
	go func() {
		buf := make([]byte, relay.MaxBody)
		for {
			if _, err := rt.read(buf); err != nil {
				return
			}
		}
	}()
	t.Cleanup(rt.close)
	r := newRemotes(Config{Relay: rt.t}, nil)
	m := map[uint64]*remoteTrack{trackKey(7, 1): rt}
	r.dispatch.Store(&m)
	for _, seq := range []uint16{10, 11, 14} {
		r.media(7, 1, rtpSeq(seq))
	}
	for range nackTries { // the first, then the timer's retries: no packet comes
		expectNACK(t, got, 12, 13)
	}
	select {
	case seqs := <-got:
		t.Fatalf("NACKed %v after the last try", seqs)
	case <-time.After(300 * time.Millisecond):
	}
	if c := rt.gaps.counts.load(); c.Lost != 2 || c.GaveUp != 2 {
		t.Errorf("counted %+v, want 2 lost, 2 given up", c)
	}
}

// relayPair is two relay transports on loopback, closed after the test.
func relayPair(t *testing.T) (*relay.Transport, *relay.Transport) {
	t.Helper()
	cfg := relay.TransportConfig{Listen: "127.0.0.1:0", Lead: time.Second, Grace: time.Minute}
	a, err := relay.Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := relay.Listen(cfg)
	if err != nil {
		_ = a.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
	return a, b
}
