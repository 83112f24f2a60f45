package cascade

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/pion/rtp"

	"github.com/podium-sfu/podium/internal/relay"
)

// The origin answers a relayed audio stream's NACKs from what it sent: the
// packet as relayed, at once; again only a round trip later (the one-RTT
// rule); never what it did not send. Real transports on loopback, time
// passed in.
func TestOriginResendsAudio(t *testing.T) {
	ot, st := relayPair(t)
	now := time.Now()
	ot.Peers().Learn(now, "sub", st.Keyring().Sender(), st.Keyring().Keys(now))
	st.Peers().Learn(now, "origin", ot.Keyring().Sender(), ot.Keyring().Keys(now))
	media := make(chan uint16, 64)
	st.SetHandler(func(_ uint32, kind relay.Kind, _ uint32, body []byte) {
		if kind == relay.KindMedia && len(body) >= 12 {
			media <- binary.BigEndian.Uint16(body[2:])
		}
	})

	const stream, rtt = 9, 50 * time.Millisecond
	addr := st.Addr()
	w := &relayWriter{t: ot, stream: stream, ssrc: stream, store: newAudioStore(), counts: &resendCounters{}}
	w.addr.Store(&addr)
	r := &relayDown{stream: stream, w: w}
	r.rtt.Store(int64(rtt))
	o := &origin{cfg: Config{Relay: ot}, subs: map[subKey]*relayDown{{"sub", stream}: r}}
	w.counts = &o.resends

	hdr := rtp.Header{Version: 2, PayloadType: 111, SSRC: stream}
	for seq := uint16(1); seq <= 5; seq++ {
		hdr.SequenceNumber = seq
		if _, err := w.WriteRTP(&hdr, make([]byte, 80)); err != nil {
			t.Fatal(err)
		}
		if got := recv(t, media); got != seq {
			t.Fatalf("relayed %d, want %d", got, seq)
		}
	}
	nack := func(at time.Time, seqs ...uint16) {
		var pairs []relay.NACKPair
		for _, s := range seqs {
			pairs = append(pairs, relay.NACKPair{First: s})
		}
		o.feedback(at, st.Keyring().Sender(), stream, relay.AppendNACK(nil, pairs))
	}
	nack(now, 3, 9) // 9 was never sent
	if got := recv(t, media); got != 3 {
		t.Fatalf("resent %d, want 3", got)
	}
	nack(now.Add(rtt/2), 3) // crossed the resend: refused
	nack(now.Add(rtt), 3)   // a round trip later: again
	if got := recv(t, media); got != 3 {
		t.Fatalf("resent %d, want 3", got)
	}
	select {
	case s := <-media:
		t.Fatalf("also sent %d", s)
	case <-time.After(50 * time.Millisecond):
	}
	want := Resends{Asked: 4, OneRTT: 1, Unavailable: 1, Audio: 2}
	if got := o.resends.load(); got != want {
		t.Fatalf("counted %+v, want %+v", got, want)
	}
	o.feedback(now, st.Keyring().Sender(), stream+1, relay.AppendNACK(nil, []relay.NACKPair{{First: 3}}))
	if got := o.resends.load().Unsubscribed; got != 1 {
		t.Fatalf("a NACK for a stream not relayed there counted %d times, want 1", got)
	}
}

func recv(t *testing.T, ch chan uint16) uint16 {
	t.Helper()
	select {
	case s := <-ch:
		return s
	case <-time.After(5 * time.Second):
		t.Fatal("nothing relayed")
		return 0
	}
}
