package playout

import (
	"testing"
	"time"
)

func TestPathRTTIsTheLeastOfTheWindow(t *testing.T) {
	type sample struct {
		at, rtt time.Duration // at: from t0
	}
	ms := time.Millisecond
	tests := []struct {
		name    string
		samples []sample
		at      time.Duration
		want    time.Duration
	}{
		{"nothing seen", nil, 0, 0},
		{"unknown samples ignored", []sample{{0, 0}, {time.Second, -ms}}, time.Second, 0},
		{"one sample", []sample{{0, 40 * ms}}, 0, 40 * ms},
		{"the least within the window", []sample{{0, 300 * ms}, {2 * time.Second, 20 * ms}, {5 * time.Second, 320 * ms}}, 9 * time.Second, 20 * ms},
		{"a dip leaves after the window", []sample{{0, 300 * ms}, {2 * time.Second, 20 * ms}, {5 * time.Second, 320 * ms}, {12 * time.Second, 310 * ms}}, 12*time.Second + 500*ms, 310 * ms},
		{"kept at least window less a slot", []sample{{0, 20 * ms}, {9 * time.Second, 300 * ms}}, 9*time.Second + 999*ms, 20 * ms},
		{"gone by the window", []sample{{0, 20 * ms}, {9 * time.Second, 300 * ms}}, 10 * time.Second, 300 * ms},
		{"all samples too old", []sample{{0, 20 * ms}}, 30 * time.Second, 0},
		{"a slot reused a lap later starts afresh", []sample{{time.Second, 20 * ms}, {11 * time.Second, 500 * ms}}, 11 * time.Second, 500 * ms},
		{"a clock stepped back stays in the latest slot", []sample{{5 * time.Second, 300 * ms}, {2 * time.Second, 250 * ms}}, 5 * time.Second, 250 * ms},
		{"a steady long path", []sample{{0, 600 * ms}, {3 * time.Second, 630 * ms}, {11 * time.Second, 610 * ms}}, 14 * time.Second, 610 * ms},
	}
	for _, tt := range tests {
		p := NewPathRTT(DefaultConfig().PathWindow)
		for _, s := range tt.samples {
			p.Observe(t0.Add(s.at), s.rtt)
		}
		if got := p.Least(t0.Add(tt.at)); got != tt.want {
			t.Errorf("%s: Least at %v = %v, want %v", tt.name, tt.at, got, tt.want)
		}
	}
}

// Behind a cap the queue stands for seconds with short drains: every 50 ms
// tick a sample of 300 ms, one of 30 ms every 8 s. The least stays on the
// drains; without them it rises to the queue a window later.
func TestPathRTTBehindAStandingQueue(t *testing.T) {
	p := NewPathRTT(10 * time.Second)
	for i := 0; i < 1200; i++ { // 60 s
		at := time.Duration(i) * 50 * time.Millisecond
		rtt := 300 * time.Millisecond
		if at < 40*time.Second && at%(8*time.Second) == 0 {
			rtt = 30 * time.Millisecond
		}
		p.Observe(t0.Add(at), rtt)
		got := p.Least(t0.Add(at))
		want := 30 * time.Millisecond
		if at >= 42*time.Second { // last drain at 32 s, its slot gone by 42 s
			want = 300 * time.Millisecond
		}
		if at > 41*time.Second && at < 42*time.Second {
			continue // the last drain's slot leaves between 41 and 42 s
		}
		if got != want {
			t.Fatalf("at %v: least %v, want %v", at, got, want)
		}
	}
	if n := testing.AllocsPerRun(1000, func() { p.Observe(t0, 100*time.Millisecond); p.Least(t0) }); n != 0 {
		t.Errorf("%v allocations an Observe and Least, want 0", n)
	}
}
