package forward

import (
	"testing"
	"time"

	"github.com/podium-sfu/podium/internal/algo/bwe"
)

func TestOnGrid(t *testing.T) {
	t0 := gridStart.Add(100 * idleTick)
	for _, c := range []struct {
		at, step, want time.Duration
	}{
		{0, idleTick, idleTick},
		{time.Millisecond, idleTick, idleTick},
		{49 * time.Millisecond, idleTick, idleTick},
		{50 * time.Millisecond, idleTick, 100 * time.Millisecond},
		{7 * time.Millisecond, probeTick, 10 * time.Millisecond},
	} {
		if got := onGrid(t0.Add(c.at), c.step); !got.Equal(t0.Add(c.want)) {
			t.Errorf("at %v, step %v: %v, want %v", c.at, c.step, got.Sub(t0), c.want)
		}
	}
}

// Links added at different times step together on the clock's grid: two
// idle Links cost one wake-up per idleTick, not two; a removed one steps no
// more, and the clock stops with the last.
func TestLinkClockStepsLinksTogether(t *testing.T) {
	c := &linkClock{wake: make(chan struct{}, 1)}
	a, b := NewLink(bwe.DefaultConfig()), NewLink(bwe.DefaultConfig())
	c.add(a, time.Now())
	time.Sleep(17 * time.Millisecond)
	c.add(b, time.Now())
	time.Sleep(6 * idleTick)
	c.mu.Lock()
	rounds, steps := c.rounds, c.steps
	c.mu.Unlock()
	// Each Link's first step is its own round; after that they share them.
	if steps < 8 || rounds > steps/2+2 {
		t.Fatalf("%d steps in %d rounds over %v, want the two Links in the same rounds", steps, rounds, 6*idleTick)
	}
	c.remove(a)
	c.mu.Lock()
	before := c.steps
	c.mu.Unlock()
	time.Sleep(3 * idleTick)
	c.mu.Lock()
	after := c.steps
	c.mu.Unlock()
	if after-before > 4 {
		t.Errorf("%d steps in %v with one Link left, want at most about 3", after-before, 3*idleTick)
	}
	c.remove(b)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		c.mu.Lock()
		alive := c.alive
		c.mu.Unlock()
		if !alive {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the clock still runs with no Link left")
		}
	}
}

// A step that panics takes down its own connection (Run panics on its
// goroutine), not the clock: the other Links keep stepping.
func TestLinkStepPanicReachesItsRunOnly(t *testing.T) {
	broken, fine := NewLink(bwe.DefaultConfig()), NewLink(bwe.DefaultConfig())
	broken.est = nil // its next step dereferences it
	done := make(chan struct{})
	defer close(done)
	go fine.Run(done)
	raised := make(chan any, 1)
	go func() {
		defer func() { raised <- recover() }()
		broken.Run(done)
	}()
	select {
	case r := <-raised:
		if r == nil {
			t.Fatal("Run returned without the step's panic")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the step's panic never reached Run")
	}
	pacerClock.mu.Lock()
	_, stillDue := pacerClock.due[broken]
	before := pacerClock.steps
	pacerClock.mu.Unlock()
	if stillDue {
		t.Error("the clock still steps the Link that panicked")
	}
	time.Sleep(3 * idleTick)
	pacerClock.mu.Lock()
	after := pacerClock.steps
	pacerClock.mu.Unlock()
	if after == before {
		t.Error("the clock stopped stepping the other Link")
	}
}
