package room

import (
	"testing"
	"time"
)

// A sender nobody watches is paused only once PauseGrace has passed since it
// started publishing video: its browser probes the uplink meanwhile. The others
// publish half a grace before it, so a grace counted from anything earlier than
// its own video (the room's start, the first sender's video) ends too soon.
//
// The room reads the wall clock, so this polls: a poll before c's grace can
// have ended that sees c paused proves it paused early.
func TestNewSenderPausedAfterItsGrace(t *testing.T) {
	const grace = 600 * time.Millisecond
	f := newFixture(t, Settings{LastN: 1, VideoPausing: true, PauseGrace: grace})
	a, b := f.join("a", true), f.join("b", true)
	time.Sleep(grace / 2)
	before := time.Now() // c's video starts after this
	c := f.join("c", true)
	joined := time.Now() // and before this
	for {
		now := time.Now()
		paused := c.paused()
		if paused && now.Before(before.Add(grace)) {
			t.Fatalf("c paused %v after it joined, within its grace of %v (a and b published %v earlier)", now.Sub(before), grace, grace/2)
		}
		if paused {
			break
		}
		if now.After(joined.Add(grace + 2*time.Second)) {
			t.Fatalf("c not paused %v after it joined, although nobody watches it (grace %v)", now.Sub(joined), grace)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if a.paused() || b.paused() {
		t.Errorf("a (paused %v) and b (paused %v) are watched, want neither paused", a.paused(), b.paused())
	}
}
