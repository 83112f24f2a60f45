package bwe

import (
	"math"
	"testing"
	"time"
)

// cluster builds a probe cluster's accounting: n packets of 1000 bytes sent
// every sendGap, arriving every recvGap, the ones in lost missing.
func cluster(n int, sendGap, recvGap time.Duration, lost map[int]bool) *prober {
	p := &prober{state: probeWaiting}
	for i := 0; i < n; i++ {
		p.sent++
		if lost[i] {
			p.reported++
			continue
		}
		s := &sent{at: time.Duration(i) * sendGap, size: 1000}
		p.onReceived(s, time.Hour+time.Duration(i)*recvGap)
	}
	return p
}

func TestProbeResult(t *testing.T) {
	ms := time.Millisecond
	cases := []struct {
		name string
		p    *prober
		want float64 // bits/s; 0: no result
	}{
		{"unsaturated: the send rate", cluster(20, 4*ms, 4*ms, nil), 2e6},
		{"slightly slower path: the receive rate", cluster(20, 4*ms, 4200*time.Microsecond, nil), 8000 / 0.0042},
		{"saturated: the receive rate", cluster(20, 4*ms, 8*ms, nil), 1e6},
		{"too few packets", cluster(4, 4*ms, 4*ms, nil), 0},
		{"more than 20 % lost", cluster(20, 4*ms, 4*ms, map[int]bool{1: true, 3: true, 5: true, 7: true, 9: true}), 0},
		{"receive rate implausibly high", cluster(20, 10*ms, 2*ms, nil), 0},
		{"spread over more than a second", cluster(20, 60*ms, 60*ms, nil), 0},
	}
	for _, c := range cases {
		got := c.p.result(DefaultConfig().ProbeMinPackets)
		if math.Abs(got-c.want) > c.want*0.01+1 {
			t.Errorf("%s: %.0f, want %.0f", c.name, got, c.want)
		}
	}
}

func TestProbeBackoff(t *testing.T) {
	cfg := DefaultConfig()
	var p prober
	var waits []time.Duration
	now := time.Duration(0)
	for i := 0; i < 5; i++ {
		p.finish(now, false, &cfg)
		waits = append(waits, p.next-now)
	}
	want := []time.Duration{time.Second, 2 * time.Second, 3 * time.Second, 3 * time.Second, 3 * time.Second}
	for i := range want {
		if waits[i] != want[i] {
			t.Fatalf("back-off %v, want %v", waits, want)
		}
	}
	if g := p.gain(cfg.ProbeGain); g != probeMinStep {
		t.Errorf("gain after failures %v, want %v", g, probeMinStep)
	}
	p.finish(now, true, &cfg)
	if p.next != now || p.gain(cfg.ProbeGain) != cfg.ProbeGain {
		t.Errorf("after a success: next %v, gain %v", p.next, p.gain(cfg.ProbeGain))
	}
}

// A sent packet keeps a cluster id's low 16 bits, 0 meaning none: an id
// whose low bits are 0 would claim every packet sent outside any cluster.
func TestProbeClusterIDsSkipTheNoneValue(t *testing.T) {
	p := prober{id: 0xffff}
	p.begin(0, 1e6)
	if uint16(p.id) == 0 {
		t.Fatalf("cluster id %#x: its low 16 bits are the none value", p.id)
	}
	if p.id != 0x10001 {
		t.Errorf("cluster id %#x after 0xffff, want 0x10001", p.id)
	}
}
