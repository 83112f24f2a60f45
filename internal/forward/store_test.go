package forward

import (
	"testing"
	"time"

	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/rewrite"
)

// A source store holds storeHorizon of its stream: 128 slots for a 360p
// stream's 60 packets/s (most of meeting-8's live heap was 512-slot stores),
// growing to 512 for 1080p's 300, and every packet of the horizon stays
// retrievable across the growth.
func TestSourceStoreSizedByRate(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		perSecond, want int
	}{{60, 128}, {100, 256}, {300, 512}} {
		up := NewUpTrack(UpTrackParams{Source: "p", Kind: webrtc.RTPCodecTypeVideo, SSRC: srcVideoSSRC, Codec: vp8Codec})
		every := time.Second / time.Duration(tc.perSecond)
		n := 10 * tc.perSecond
		for i := range n {
			b := []byte{0x80, 96, byte(i >> 8), byte(i), 0, 0, 0, 0, 0, 0, 0, 1, byte(i)}
			pkt := Packet{Buf: b, Arrival: t0.Add(time.Duration(i) * every)}
			pkt.Header.SequenceNumber = uint16(i)
			up.keep(&pkt)
		}
		if got := up.store.Capacity(); got != tc.want {
			t.Errorf("%d packets/s: %d slots, want %d", tc.perSecond, got, tc.want)
		}
		dst := make([]byte, 1500)
		for i := n - min(tc.want, 2*tc.perSecond); i < n; i++ {
			if k, ok := up.stored(uint16(i), dst); !ok || k != 13 || dst[12] != byte(i) {
				t.Fatalf("%d packets/s: packet %d of the last 2 s not kept", tc.perSecond, i)
			}
		}
	}
}

// The store of an encoding nobody is sent goes once storeHorizon has passed
// since its last packet was kept (until then NACKs are still answered from
// it), and comes back when the encoding is sent again.
func TestIdleEncodingStoreFreed(t *testing.T) {
	up := newVideoUp(t, nil)
	d := bindDown(t, up, "r", videoContextNoRTX(1).withWriter(&counter{}))
	src := &video{t: t}
	now := t0
	receive := func(payload []byte) {
		now = now.Add(33 * time.Millisecond)
		up.Receive(now, src.next(payload, true), up.testOut())
	}
	receive(vp8Key)
	receive(vp8Delta)
	kept := src.seq
	d.SetSelected(false)
	lastKept := now
	for now.Sub(lastKept) < storeHorizon-50*time.Millisecond {
		receive(vp8Delta)
	}
	if _, ok := up.stored(kept, make([]byte, 1500)); !ok {
		t.Fatalf("packet %d gone %v after the encoding stopped being sent", kept, now.Sub(lastKept))
	}
	for now.Sub(lastKept) < storeHorizon+50*time.Millisecond {
		receive(vp8Delta)
	}
	if up.store != nil {
		t.Fatalf("the store of an encoding nobody was sent for %v still holds %d slots", now.Sub(lastKept), up.store.Capacity())
	}
	d.SetSelected(true)
	receive(vp8Key)
	if _, ok := up.stored(src.seq, make([]byte, 1500)); !ok || up.store.Capacity() != storeMinSlots {
		t.Fatalf("sent again: packet kept %v, want a new store of %d slots", ok, storeMinSlots)
	}
}

// A destination's log of what it sent covers storeHorizon as the source's
// store does: 128 entries for 60 packets/s, 256 for 100, 512 (the most) for
// 300, and every packet of the last 2 s stays answerable across the growth.
func TestSentLogSizedByRate(t *testing.T) {
	for _, tc := range []struct {
		perSecond, want int
	}{{60, 128}, {100, 256}, {300, 512}} {
		l := NewDownTrack(newVideoUp(t, nil), "r").sent
		every := time.Second / time.Duration(tc.perSecond)
		n := 10 * tc.perSecond
		for i := range n {
			l.add(rewrite.Output{SequenceNumber: uint16(i), SwitchedTo: -1}, 0, uint16(i), 0, false, t0.Add(time.Duration(i)*every))
		}
		if got := len(l.entries); got != tc.want {
			t.Errorf("%d packets/s: %d entries, want %d", tc.perSecond, got, tc.want)
		}
		end := t0.Add(time.Duration(n) * every)
		for i := n - min(tc.want, 2*tc.perSecond); i < n; i++ {
			if e, check := l.lookup(uint16(i), end, 0, 0); e == nil || check != resendOK || e.srcSeq != uint16(i) {
				t.Fatalf("%d packets/s: packet %d of the last 2 s not logged", tc.perSecond, i)
			}
		}
	}
}

// Run's batch has room for the fan-out, in powers of two up to fanoutBatch,
// not fanoutBatch slots for every stream.
func TestRunBatchSizedByFanout(t *testing.T) {
	up := newVideoUp(t, nil)
	for _, c := range []struct{ downs, slots int }{{0, 1}, {3, 4}, {7, 8}, {13, 16}, {40, fanoutBatch}} {
		for len(up.Downs()) < c.downs {
			up.AddDown(NewDownTrack(up, "r"))
		}
		if got := up.runBatch().Free(); got != c.slots {
			t.Errorf("%d destinations: a batch of %d, want %d", c.downs, got, c.slots)
		}
	}
}
