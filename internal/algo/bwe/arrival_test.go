package bwe

import (
	"testing"
	"time"
)

func TestInterArrivalGroups(t *testing.T) {
	type pkt struct{ send, arrival time.Duration }
	cases := []struct {
		name   string
		pkts   []pkt
		deltas []delta
	}{
		{
			name: "packets sent within 5 ms form one group",
			pkts: []pkt{{0, 50 * ms1}, {2 * ms1, 52 * ms1}, {4 * ms1, 55 * ms1}, {20 * ms1, 70 * ms1}, {40 * ms1, 95 * ms1}},
			// groups: [0..4] [20] [40]: one delta when the third starts
			deltas: []delta{{send: 16 * ms1, arrival: 15 * ms1, at: 70 * ms1}},
		},
		{
			name: "a burst arriving back to back joins the group",
			// sent 10 ms apart, delivered together after a queue: one burst group
			pkts:   []pkt{{0, 50 * ms1}, {10 * ms1, 51 * ms1}, {20 * ms1, 52 * ms1}, {40 * ms1, 80 * ms1}, {60 * ms1, 100 * ms1}},
			deltas: []delta{{send: 20 * ms1, arrival: 28 * ms1, at: 80 * ms1}},
		},
		{
			name:   "a packet sent before the current group is skipped",
			pkts:   []pkt{{0, 50 * ms1}, {20 * ms1, 70 * ms1}, {10 * ms1, 75 * ms1}, {40 * ms1, 90 * ms1}, {60 * ms1, 110 * ms1}},
			deltas: []delta{{send: 20 * ms1, arrival: 20 * ms1, at: 70 * ms1}, {send: 20 * ms1, arrival: 20 * ms1, at: 90 * ms1}},
		},
	}
	for _, c := range cases {
		var ia interArrival
		var got []delta
		for _, p := range c.pkts {
			if d, ok := ia.add(p.send, p.arrival, 1000); ok {
				got = append(got, d)
			}
		}
		if len(got) != len(c.deltas) {
			t.Errorf("%s: %d deltas %v, want %v", c.name, len(got), got, c.deltas)
			continue
		}
		for i := range got {
			if got[i] != c.deltas[i] {
				t.Errorf("%s: delta %d = %+v, want %+v", c.name, i, got[i], c.deltas[i])
			}
		}
	}
}

func TestInterArrivalClockJumpResets(t *testing.T) {
	var ia interArrival
	for i := 0; i < 5; i++ {
		ia.add(time.Duration(i)*20*ms1, time.Duration(i)*20*ms1+50*ms1, 1000)
	}
	// The receiver's clock jumps back by an hour.
	ia.add(100*ms1, 150*ms1-time.Hour, 1000)
	_, ok := ia.add(120*ms1, 170*ms1-time.Hour, 1000)
	if ia.resets != 1 {
		t.Fatalf("resets = %d, want 1", ia.resets)
	}
	if ok {
		t.Fatal("a delta across the jump")
	}
}
