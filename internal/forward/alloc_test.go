package forward

import (
	"fmt"
	"testing"
	"time"

	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/algo/bwe"
)

// forwardFixture is one video source forwarding to n bound destinations that
// write into counters, with a keyframe already through so every packet is sent.
type forwardFixture struct {
	up      *UpTrack
	downs   []*DownTrack
	writers []*counter
	raw     []byte
	pkt     Packet
	seq     uint16
}

func newForwardFixture(tb testing.TB, n int) *forwardFixture {
	return newFixture(tb, n, false)
}

// newFixture optionally puts each destination under congestion control (its
// own Link, transport-cc and playout-delay negotiated), as the server does.
func newFixture(tb testing.TB, n int, linked bool) *forwardFixture {
	tb.Helper()
	f := &forwardFixture{up: newVideoUp(tb, &keyframeRequests{})}
	for i := range n {
		w := &counter{}
		ctx := videoContext(webrtc.SSRC(1000+i), webrtc.SSRC(2000+i)).withWriter(w)
		d := NewDownTrack(f.up, fmt.Sprint("r", i))
		if linked {
			// A lossy long path: the link asks a playout delay, every packet carries it.
			l := NewLink(bwe.DefaultConfig())
			l.asked.Store(playoutAsked | 0x04b3e8)
			d.SetLink(l)
			ctx.withTWCC(3).withPlayoutDelay(5)
		}
		if _, err := d.Bind(ctx); err != nil {
			tb.Fatal(err)
		}
		f.up.AddDown(d)
		f.downs = append(f.downs, d)
		f.writers = append(f.writers, w)
	}
	feed(tb, f.up, rtpPacket(tb, srcVideoSSRC, srcVideoPT, 0, 0, true, vp8Key), t0)
	// A typical 1200-byte delta packet with an extension, rewritten per destination.
	payload := append([]byte(nil), vp8Delta...)
	payload = append(payload, make([]byte, 1200-len(payload))...)
	f.raw = rtpPacket(tb, srcVideoSSRC, srcVideoPT, 1, 3000, true, payload)
	return f
}

// step forwards the next packet: what Run does for each packet read.
func (f *forwardFixture) step() {
	f.seq++
	f.raw[2], f.raw[3] = byte(f.seq>>8), byte(f.seq)
	if f.up.parse(time.Now(), f.raw, &f.pkt, true) {
		f.up.forward(&f.pkt, f.up.testOut())
	}
}

func TestForwardDoesNotAllocate(t *testing.T) {
	for _, linked := range []bool{false, true} {
		f := newFixture(t, 3, linked)
		before := f.writers[0].n
		allocs := testing.AllocsPerRun(1000, f.step)
		if allocs != 0 {
			t.Errorf("%v allocations per forwarded packet (1 source → 3 destinations, congestion control %v), want 0", allocs, linked)
		}
		for i, w := range f.writers {
			if w.n-before < 1000 {
				t.Errorf("destination %d got %d packets, the measurement forwarded nothing", i, w.n-before)
			}
		}
	}
}

func TestProbePaddingDoesNotAllocate(t *testing.T) {
	f := newFixture(t, 1, true)
	f.step() // a frame's end: padding may follow
	d, w := f.downs[0], f.writers[0]
	before := w.n
	now := time.Now()
	allocs := testing.AllocsPerRun(1000, func() {
		now = now.Add(time.Millisecond)
		if d.pad(now, 1, nil) == 0 {
			t.Fatal("no padding sent")
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per probe packet, want 0", allocs)
	}
	if w.n-before < 1000 {
		t.Errorf("%d probe packets written", w.n-before)
	}
}

func TestNACKAnswerDoesNotAllocate(t *testing.T) {
	f := newForwardFixture(t, 1)
	for range 100 {
		f.step()
	}
	d, w := f.downs[0], f.writers[0]
	before := w.n
	now := time.Now() // after the packets were stored: parse stamps them with the wall clock
	allocs := testing.AllocsPerRun(1000, func() {
		now = now.Add(time.Millisecond)
		if !d.resend(f.seq-50, now, nil) {
			t.Fatal("cached packet not resent")
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per retransmission, want 0", allocs)
	}
	if w.n-before < 1000 {
		t.Errorf("%d retransmissions written", w.n-before)
	}
}

func BenchmarkForward(b *testing.B) {
	for _, n := range []int{1, 8} {
		b.Run(fmt.Sprintf("to-%d", n), func(b *testing.B) {
			f := newForwardFixture(b, n)
			b.ReportAllocs()
			b.SetBytes(int64(len(f.raw)))
			for b.Loop() {
				f.step()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/write")
		})
		b.Run(fmt.Sprintf("to-%d-congestion-controlled", n), func(b *testing.B) {
			f := newFixture(b, n, true)
			b.ReportAllocs()
			b.SetBytes(int64(len(f.raw)))
			for b.Loop() {
				f.step()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/write")
		})
	}
}
