package forward

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/pion/srtp/v3"
	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/algo/bwe"
	"github.com/podium-sfu/podium/internal/wire"
)

// BenchmarkFanOutCold is the user-space half of a video packet's fan-out on
// the own data plane — for each of 50 destinations: projection, rewrite,
// transport-wide stamp and the estimator's record, the sent log, sealing into
// the batch, and the flush's Departed — with the caches emptied between
// packets (cold) or not (warm). On a busy server a destination's state is
// cold by its next packet: the kernel's sends, the other goroutines and the
// other process run in between. The batch's socket is closed, so the flush
// hands nothing to the kernel (bench forward measures that half; the one
// allocation per packet is the closed socket's error). Compare layouts of the
// per-destination state with it, runs in turn (ns/op is per packet read, 50
// destinations); docs/performance.md has the command and figures.
func BenchmarkFanOutCold(b *testing.B) {
	for _, cold := range []bool{true, false} {
		name := "warm"
		if cold {
			name = "cold"
		}
		b.Run(name, func(b *testing.B) { benchFanOut(b, 50, cold) })
	}
}

func benchFanOut(b *testing.B, n int, cold bool) {
	conn := udp(b)
	sock, err := wire.NewSocket(conn)
	if err != nil {
		b.Fatal(err)
	}
	up := newVideoUp(b, &keyframeRequests{})
	links := make([]*Link, n)
	for i := range n {
		k := testKeys(srtp.ProtectionProfileAeadAes128Gcm, byte(i*4))
		d := NewDownTrack(up, fmt.Sprint("r", i))
		links[i] = NewLink(bwe.DefaultConfig())
		d.SetLink(links[i])
		d.SetRoute(ownRoute(b, k, sock, netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), uint16(20000+i))))
		if _, err := d.Bind(videoContext(webrtc.SSRC(1000+i), webrtc.SSRC(2000+i)).withWriter(&recorder{}).withTWCC(3)); err != nil {
			b.Fatal(err)
		}
		up.AddDown(d)
	}
	_ = conn.Close() // flushes reach no system call from here on
	out := wire.NewBatch(64)
	up.Receive(t0, rtpPacket(b, srcVideoSSRC, srcVideoPT, 0, 0, true, vp8Key), out)
	payload := append(append([]byte(nil), vp8Delta...), make([]byte, 1200-len(vp8Delta))...)
	raw := rtpPacket(b, srcVideoSSRC, srcVideoPT, 0, 0, true, payload)
	evict := make([]byte, 32<<20) // beyond the caches of this machine kind
	seq, ts := uint16(0), uint32(0)
	now := t0
	next := func() {
		seq++
		ts += 3000
		now = now.Add(33 * time.Millisecond)
		raw[2], raw[3] = byte(seq>>8), byte(seq)
		raw[4], raw[5], raw[6], raw[7] = byte(ts>>24), byte(ts>>16), byte(ts>>8), byte(ts)
		up.Receive(now, raw, out)
	}
	for range 10000 { // the logs and the estimators' histories grown to their steady size
		next()
	}
	stamped := links[0].seq
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if cold {
			b.StopTimer()
			for i := 0; i < len(evict); i += 64 {
				evict[i]++
			}
			b.StartTimer()
		}
		next()
	}
	b.StopTimer()
	// The scenario held: every destination stamped every packet.
	for i, l := range links {
		if got := l.seq - stamped; got != uint16(b.N) {
			b.Fatalf("destination %d stamped %d packets of %d", i, got, b.N)
		}
	}
}
