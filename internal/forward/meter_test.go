package forward

import (
	"fmt"
	"testing"
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
	// One packet in latencySampleEvery is timed, once per destination.
	if got, want := s.Latency.Count(), uint64(3*n/latencySampleEvery); got != want {
		t.Errorf("%d latency samples, want %d", got, want)
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
