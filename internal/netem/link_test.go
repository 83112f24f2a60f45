package netem

import (
	"math"
	"math/rand"
	"testing"
	"time"
)

const ms = time.Millisecond

func newLink(cfg Config, seed int64) *Link { return New(cfg, rand.New(rand.NewSource(seed))) }

// Without a rate every packet arrives exactly Delay after it was sent.
func TestDelayApplied(t *testing.T) {
	for _, d := range []time.Duration{0, 1 * ms, 100 * ms, 300 * ms} {
		l := newLink(Config{Delay: d}, 1)
		for i := range 1000 {
			now := time.Duration(i) * 3 * ms
			at, ok := l.Send(now, 1200)
			if !ok || at != now+d {
				t.Fatalf("delay %v: packet %d sent at %v arrives at %v (%v), want %v", d, i, now, at, ok, now+d)
			}
		}
	}
}

// Jitter stays within [Delay, Delay+Jitter) and keeps the order; with Reorder
// it stays within the bound too but packets overtake each other. Packets 40 ms
// apart (more than the jitter) never wait for each other, so their delays
// spread over the whole range; at 1 ms apart, keeping the order holds many
// back behind a slower one, which shifts the delays up (as on a real path).
func TestJitterBoundedAndOrdered(t *testing.T) {
	for _, tc := range []struct {
		name         string
		reorder      bool
		gap          time.Duration
		minOvertaken int
		maxLow       time.Duration // the lowest delay seen is at most this
	}{
		{"ordered sparse", false, 40 * ms, 0, 101 * ms},
		{"ordered dense", false, ms, 0, 125 * ms},
		{"reorder sparse", true, 40 * ms, 0, 101 * ms},
		{"reorder dense", true, ms, 1000, 101 * ms},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for seed := int64(1); seed <= 5; seed++ {
				l := newLink(Config{Delay: 100 * ms, Jitter: 30 * ms, Reorder: tc.reorder}, seed)
				var last time.Duration
				overtaken := 0
				lo, hi := time.Hour, time.Duration(0)
				for i := range 5000 {
					now := time.Duration(i) * tc.gap
					at, ok := l.Send(now, 1200)
					if !ok {
						t.Fatal("lost without loss configured")
					}
					d := at - now
					lo, hi = min(lo, d), max(hi, d)
					if d < 100*ms || d >= 130*ms {
						t.Fatalf("seed %d: packet %d delayed %v, want within [100ms, 130ms)", seed, i, d)
					}
					if at < last {
						overtaken++
					}
					last = max(last, at)
				}
				if !tc.reorder && overtaken > 0 {
					t.Fatalf("seed %d: %d packets arrived before one sent earlier", seed, overtaken)
				}
				if overtaken < tc.minOvertaken {
					t.Fatalf("seed %d: only %d of 5000 packets overtaken, want at least %d", seed, overtaken, tc.minOvertaken)
				}
				if lo > tc.maxLow || hi < 129*ms {
					t.Fatalf("seed %d: delays within [%v, %v], want from at most %v to at least 129ms", seed, lo, hi, tc.maxLow)
				}
			}
		})
	}
}

// Independent loss: the rate lost is within 5 standard deviations of Loss.
func TestRandomLossRate(t *testing.T) {
	const n = 100_000
	for _, p := range []float64{0.001, 0.02, 0.1, 0.5} {
		for seed := int64(1); seed <= 3; seed++ {
			l := newLink(Config{Loss: p}, seed)
			for i := range n {
				l.Send(time.Duration(i)*ms, 100)
			}
			st := l.Stats()
			sd := math.Sqrt(n * p * (1 - p))
			if math.Abs(float64(st.Lost)-n*p) > 5*sd || st.Lost+st.Delivered != n {
				t.Errorf("loss %v seed %d: %+v, want %.0f ± %.0f lost", p, seed, st, n*p, 5*sd)
			}
		}
	}
}

// Gilbert–Elliott loss keeps the long-run rate and loses in runs of mean
// BurstLen (geometric: the mean of 1/(1−q) with q = 1 − 1/BurstLen).
func TestBurstyLossRuns(t *testing.T) {
	const n = 400_000
	for _, tc := range []struct{ loss, burst float64 }{{0.03, 6}, {0.05, 3}, {0.01, 10}} {
		l := newLink(Config{Loss: tc.loss, BurstLen: tc.burst}, 7)
		runs, run, lost := 0, 0, 0
		for i := range n {
			if _, ok := l.Send(time.Duration(i)*ms, 100); ok {
				if run > 0 {
					runs++
				}
				run = 0
			} else {
				run++
				lost++
			}
		}
		rate, mean := float64(lost)/n, float64(lost)/float64(runs)
		if math.Abs(rate-tc.loss) > 0.15*tc.loss {
			t.Errorf("loss %v burst %v: lost %.4f of packets, want within 15 %%", tc.loss, tc.burst, rate)
		}
		if math.Abs(mean-tc.burst) > 0.1*tc.burst {
			t.Errorf("loss %v burst %v: mean run %.2f packets over %d runs, want within 10 %%", tc.loss, tc.burst, mean, runs)
		}
	}
}

// Offered three times the rate, the link delivers the rate, holds the queue
// within its bound and drops the excess (drop-tail).
func TestRateLimitAndQueueBound(t *testing.T) {
	const (
		rate = 1_000_000
		size = 1000
		n    = 3750 // 10 s at 3 Mb/s
	)
	tx := time.Duration(size * 8 * int64(time.Second) / rate) // 8 ms a packet
	for _, tc := range []struct {
		name     string
		cfg      Config
		maxQueue time.Duration // longest wait a packet that got in may have
	}{
		{"queue 100ms", Config{Rate: rate, QueueTime: 100 * ms}, 100 * ms},
		{"queue 10000 bytes", Config{Rate: rate, QueueBytes: 10_000}, 10 * tx},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLink(tc.cfg, 1)
			var first, last time.Duration
			delivered := 0
			for i := range n {
				now := time.Duration(i) * 8 * ms / 3
				q := l.QueueDelay(now)
				at, ok := l.Send(now, size)
				if !ok {
					continue
				}
				if q > tc.maxQueue {
					t.Fatalf("packet %d admitted behind %v of queue, bound %v", i, q, tc.maxQueue)
				}
				if at-now < tx {
					t.Fatalf("packet %d took %v, less than its %v transmission", i, at-now, tx)
				}
				if delivered == 0 {
					first = at
				}
				last = at
				delivered++
			}
			got := float64((delivered-1)*size*8) / (last - first).Seconds()
			if math.Abs(got-rate)/rate > 0.01 {
				t.Errorf("throughput %.0f b/s, want %d ± 1 %%", got, rate)
			}
			st := l.Stats()
			if st.Dropped < n*6/10 || st.Dropped > n*7/10 || st.Delivered != delivered {
				t.Errorf("%+v: want about two thirds of %d dropped", st, n)
			}
		})
	}
}

// A lower rate set mid-run slows the link from then on.
func TestSetRate(t *testing.T) {
	l := newLink(Config{Rate: 8_000_000}, 1)
	a, _ := l.Send(0, 1000) // 1 ms at 8 Mb/s
	l.SetRate(800_000)
	b, _ := l.Send(a, 1000) // 10 ms at 0.8 Mb/s
	if a != ms || b-a != 10*ms {
		t.Fatalf("arrivals %v, %v: want 1ms then 10ms later", a, b)
	}
}

// The same seed gives the same run; another seed another one.
func TestDeterministic(t *testing.T) {
	cfg := Config{Rate: 2_000_000, QueueTime: 50 * ms, Delay: 20 * ms, Jitter: 10 * ms, Loss: 0.05, BurstLen: 3}
	run := func(seed int64) []time.Duration {
		l := newLink(cfg, seed)
		var out []time.Duration
		for i := range 2000 {
			at, ok := l.Send(time.Duration(i)*2*ms, 400+i%800)
			if !ok {
				at = -1
			}
			out = append(out, at)
		}
		return out
	}
	a, b, c := run(3), run(3), run(4)
	same := func(x, y []time.Duration) bool {
		for i := range x {
			if x[i] != y[i] {
				return false
			}
		}
		return true
	}
	if !same(a, b) || same(a, c) {
		t.Fatal("runs not determined by the seed")
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg Config
		ok  bool
	}{
		{Config{}, true},
		{Config{Rate: 3_000_000, QueueTime: 100 * ms, Delay: 100 * ms, Jitter: 30 * ms, Loss: 0.02, BurstLen: 4}, true},
		{Config{Rate: -1}, false},
		{Config{QueueTime: -ms}, false},
		{Config{QueueBytes: -1}, false},
		{Config{Delay: -ms}, false},
		{Config{Jitter: -ms}, false},
		{Config{Loss: 1}, false},
		{Config{Loss: -0.1}, false},
		{Config{BurstLen: -2}, false},
	} {
		if err := tc.cfg.Validate(); (err == nil) != tc.ok {
			t.Errorf("%+v: Validate() = %v, want ok %v", tc.cfg, err, tc.ok)
		}
	}
}
