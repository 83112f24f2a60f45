package forward

import (
	"fmt"
	"testing"
	"time"
)

func TestMeterCountsForwardedPackets(t *testing.T) {
	f := newForwardFixture(t, 3)
	m := &Meter{}
	f.up.p.Meter = m
	const n = 64
	for range n {
		f.step()
	}
	s := m.Snapshot()
	if s.ReceivedPackets != n || s.ReceivedBytes != n*uint64(len(f.raw)) {
		t.Errorf("received %d packets / %d bytes, want %d / %d", s.ReceivedPackets, s.ReceivedBytes, n, n*len(f.raw))
	}
	if s.ForwardedPackets != 3*n {
		t.Errorf("forwarded %d packets, want %d (3 destinations)", s.ForwardedPackets, 3*n)
	}
	wantBytes := uint64(3 * n * (rtpHeaderLen + len(f.pkt.Payload)))
	if s.ForwardedBytes != wantBytes {
		t.Errorf("forwarded %d bytes, want %d", s.ForwardedBytes, wantBytes)
	}
	// Sequence numbers 2…65 hold four multiples of latency.StampEvery: each is
	// timed once per destination. Without socket stamps only the forwarding path is.
	if got, want := s.ForwardLatency.Count(), uint64(3*4); got != want {
		t.Errorf("%d forwarding latency samples, want %d", got, want)
	}
	if got := s.Latency.Count(); got != 0 {
		t.Errorf("%d socket-to-send samples without socket stamps", got)
	}
}

func TestMeterLatencyFromTheSocket(t *testing.T) {
	f := newForwardFixture(t, 2)
	m := &Meter{}
	f.up.p.Meter = m
	for range 32 {
		f.seq++
		f.raw[2], f.raw[3] = byte(f.seq>>8), byte(f.seq)
		m.Stamps.Observe(f.raw, time.Now().Add(-time.Millisecond)) // what the socket reader does
		if f.up.parse(time.Now(), f.raw, &f.pkt, true) {
			f.up.forward(&f.pkt, f.up.testOut())
		}
	}
	s := m.Snapshot()
	if got := s.Latency.Count(); got != 2*2 {
		t.Fatalf("%d socket-to-send samples, want 4 (2 sampled packets × 2 destinations)", got)
	}
	// The histogram resolves 1/16 of an octave, and interpolates inside a bucket.
	if p := s.Latency.Quantile(0.5); p < time.Millisecond*15/16 || p > time.Second {
		t.Errorf("socket-to-send median %v, want about the 1 ms the stamp predates the packet", p)
	}
	if s.ForwardLatency.Quantile(1) >= s.Latency.Quantile(0) {
		t.Errorf("the forwarding path (%v) should be a part of the socket-to-send latency (%v)", s.ForwardLatency.Quantile(1), s.Latency.Quantile(0))
	}
}

func TestMeteredForwardDoesNotAllocate(t *testing.T) {
	f := newForwardFixture(t, 3)
	f.up.p.Meter = &Meter{}
	if allocs := testing.AllocsPerRun(1000, f.step); allocs != 0 {
		t.Errorf("%v allocations per forwarded packet with the meter on, want 0", allocs)
	}
}

func BenchmarkForwardMetered(b *testing.B) {
	for _, n := range []int{1, 8} {
		b.Run(fmt.Sprintf("to-%d", n), func(b *testing.B) {
			f := newForwardFixture(b, n)
			f.up.p.Meter = &Meter{}
			b.ReportAllocs()
			b.SetBytes(int64(len(f.raw)))
			for b.Loop() {
				f.step()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/write")
		})
	}
}
