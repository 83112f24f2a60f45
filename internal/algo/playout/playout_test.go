package playout

import (
	"testing"
	"time"
)

var t0 = time.Unix(1_700_000_000, 0)

// drive feeds the controller once every 50 ms (Link's tick) for d, with the
// repairs counted by repairsAt, and returns the delays it asked.
func drive(c *Controller, from time.Time, d time.Duration, rtt time.Duration, repairsAt func(time.Duration) uint64) []time.Duration {
	var out []time.Duration
	for at := time.Duration(0); at < d; at += 50 * time.Millisecond {
		out = append(out, c.Update(from.Add(at), rtt, repairsAt(at)))
	}
	return out
}

func TestNothingAskedWithoutRepairs(t *testing.T) {
	c := New(DefaultConfig())
	for _, d := range drive(c, t0, time.Minute, 600*time.Millisecond, func(time.Duration) uint64 { return 7 }) {
		if d != 0 {
			t.Fatalf("asked %v on a path with no repairs (a constant count from before)", d)
		}
	}
}

func TestLongRoundTripWithRepairsAsksARoundTripAndAMargin(t *testing.T) {
	tests := []struct {
		rtt  time.Duration
		want time.Duration
	}{
		{100 * time.Millisecond, 0},                        // under MinRTT: the receiver's own wait covers it
		{220 * time.Millisecond, 0},                        // a 100 ms queue beside downloads: still covered
		{300 * time.Millisecond, 450 * time.Millisecond},   // 300 + 150
		{602 * time.Millisecond, 800 * time.Millisecond},   // 752 rounded up to the 50 ms step
		{1500 * time.Millisecond, 1000 * time.Millisecond}, // bounded by Max
	}
	for _, tt := range tests {
		c := New(DefaultConfig())
		// 3 repairs a second: 2 % of a 1.5 Mb/s video's packets.
		got := drive(c, t0, 10*time.Second, tt.rtt, func(at time.Duration) uint64 { return uint64(3 * at / time.Second) })
		if last := got[len(got)-1]; last != tt.want {
			t.Errorf("rtt %v: asked %v, want %v", tt.rtt, last, tt.want)
		}
	}
}

func TestAStrayLossAsksNothing(t *testing.T) {
	c := New(DefaultConfig())
	got := drive(c, t0, 30*time.Second, 600*time.Millisecond, func(at time.Duration) uint64 {
		return uint64(at / (4 * time.Second)) // one repair every 4 s: under 3 a 5 s window
	})
	for i, d := range got {
		if d != 0 {
			t.Fatalf("asked %v at %v for one repair every 4 s", d, time.Duration(i)*50*time.Millisecond)
		}
	}
}

func TestDelayIsGivenBackAHoldAfterRepairsStop(t *testing.T) {
	cfg := DefaultConfig()
	c := New(cfg)
	stop := 10 * time.Second
	repairs := func(at time.Duration) uint64 { return uint64(3 * min(at, stop) / time.Second) }
	got := drive(c, t0, stop+cfg.Window+cfg.Hold+time.Second, 600*time.Millisecond, repairs)
	at := func(d time.Duration) time.Duration { return got[d/(50*time.Millisecond)] }
	if at(stop-time.Second) == 0 {
		t.Fatal("nothing asked while repairs happened")
	}
	// The last window with repairs closes at most a Window after they stop;
	// the delay stays a Hold from then.
	if at(stop+cfg.Hold-time.Second) == 0 {
		t.Errorf("delay given back within the hold (%v after repairs stopped)", cfg.Hold-time.Second)
	}
	if last := got[len(got)-1]; last != 0 {
		t.Errorf("still asking %v a window and a hold after repairs stopped", last)
	}
}

func TestJitteryRoundTripDoesNotRetune(t *testing.T) {
	c := New(DefaultConfig())
	changes, last := 0, time.Duration(-1)
	for i := 0; i < 2000; i++ { // 100 s, RTT wavering 640 ± 30 ms across the 800 ms step boundary
		rtt := 640*time.Millisecond + time.Duration((i*37)%61-30)*time.Millisecond
		d := c.Update(t0.Add(time.Duration(i)*50*time.Millisecond), rtt, uint64(i/5))
		if d != last {
			changes++
			last = d
		}
	}
	if changes > 3 {
		t.Errorf("the asked delay changed %d times under a jittery round trip, want at most 3 (the first ask and a step)", changes)
	}
}

// A queue makes the round trip waver around MinRTT: the delay, once asked,
// follows it but is not switched off and on.
func TestRoundTripAroundMinRTTKeepsTheDelay(t *testing.T) {
	c := New(DefaultConfig())
	offs, last := 0, time.Duration(0)
	for i := 0; i < 1200; i++ { // 60 s, RTT 270 or 230 ms in turns of 1 s
		rtt := 270 * time.Millisecond
		if (i/20)%2 == 1 {
			rtt = 230 * time.Millisecond
		}
		d := c.Update(t0.Add(time.Duration(i)*50*time.Millisecond), rtt, uint64(i/5))
		if d == 0 && last > 0 {
			offs++
		}
		last = d
	}
	if offs > 0 || last == 0 {
		t.Errorf("the delay was given back %d times while repairs went on (last %v), want never", offs, last)
	}
}

func TestDelayFollowsAShorterRoundTripDownByMoreThanAStep(t *testing.T) {
	c := New(DefaultConfig())
	repairs := func(at time.Duration) uint64 { return uint64(3 * at / time.Second) }
	drive(c, t0, 5*time.Second, 600*time.Millisecond, repairs)
	got := drive(c, t0.Add(5*time.Second), 5*time.Second, 300*time.Millisecond, func(at time.Duration) uint64 { return repairs(at + 5*time.Second) })
	if last := got[len(got)-1]; last != 450*time.Millisecond {
		t.Errorf("after the round trip fell to 300 ms: asked %v, want 450ms", last)
	}
}

func TestExtensionEncoding(t *testing.T) {
	tests := []struct {
		least time.Duration
		want  [3]byte
	}{
		// 12 bits of least then 12 of largest (1000 × 10 ms = 0x3e8), RFC-style big-endian.
		{0, [3]byte{0x00, 0x03, 0xe8}},
		{800 * time.Millisecond, [3]byte{0x05, 0x03, 0xe8}}, // 80 = 0x050
		{time.Second, [3]byte{0x06, 0x43, 0xe8}},            // 100 = 0x064
		{time.Hour, [3]byte{0xff, 0xf3, 0xe8}},              // saturates at 0xfff
	}
	for _, tt := range tests {
		if got := Extension(tt.least); got != tt.want {
			t.Errorf("Extension(%v) = % x, want % x", tt.least, got, tt.want)
		}
		if back := Least(tt.want); back != min(tt.least, 0xfff*10*time.Millisecond) {
			t.Errorf("Least(% x) = %v, want %v", tt.want, back, tt.least)
		}
	}
}
