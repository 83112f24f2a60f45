package gridclock

import (
	"sync/atomic"
	"testing"
	"time"
)

const tick = 50 * time.Millisecond

// counter steps every interval and counts its steps; it panics on its
// panicAt-th step when that is set.
type counter struct {
	interval time.Duration
	steps    atomic.Int64
	panicAt  int64
	panicked chan any
	running  atomic.Bool // inside Step
	slow     time.Duration
}

func (c *counter) Step(time.Time) (time.Duration, bool) {
	c.running.Store(true)
	defer c.running.Store(false)
	if n := c.steps.Add(1); n == c.panicAt {
		panic("step broke")
	}
	time.Sleep(c.slow)
	return c.interval, true
}

func (c *counter) StepPanicked(r any) { c.panicked <- r }

func TestOnGrid(t *testing.T) {
	t0 := origin.Add(100 * tick)
	for _, c := range []struct {
		at, step, want time.Duration
	}{
		{0, tick, tick},
		{time.Millisecond, tick, tick},
		{49 * time.Millisecond, tick, tick},
		{50 * time.Millisecond, tick, 100 * time.Millisecond},
		{7 * time.Millisecond, 10 * time.Millisecond, 10 * time.Millisecond},
	} {
		if got := OnGrid(t0.Add(c.at), c.step); !got.Equal(t0.Add(c.want)) {
			t.Errorf("at %v, step %v: %v, want %v", c.at, c.step, got.Sub(t0), c.want)
		}
	}
}

// Items added at different times step together on the grid: two items cost
// one wake-up per interval, not two; a removed one steps no more, and the
// clock stops with the last.
func TestItemsStepTogether(t *testing.T) {
	var c Clock
	a, b := &counter{interval: tick}, &counter{interval: tick}
	c.Add(a, time.Now())
	time.Sleep(17 * time.Millisecond)
	c.Add(b, time.Now())
	time.Sleep(6 * tick)
	rounds, steps := c.Counts()
	// Each item's first step is its own round; after that they share them.
	if steps < 8 || rounds > steps/2+2 {
		t.Fatalf("%d steps in %d rounds over %v, want the two items in the same rounds", steps, rounds, 6*tick)
	}
	c.Remove(a)
	before := a.steps.Load()
	time.Sleep(3 * tick)
	if after := a.steps.Load(); after != before {
		t.Errorf("%d steps after Remove", after-before)
	}
	if b.steps.Load() < 8 {
		t.Errorf("the item left took %d steps, want it still stepping", b.steps.Load())
	}
	c.Remove(b)
	for deadline := time.Now().Add(5 * time.Second); c.Running(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the clock still runs with no item left")
		}
	}
	// It starts again with the next item.
	d := &counter{interval: tick}
	c.Add(d, time.Now())
	time.Sleep(3 * tick)
	c.Remove(d)
	if d.steps.Load() == 0 {
		t.Error("an item added after the clock stopped never stepped")
	}
}

// Remove returns only once a step of the item under way has finished.
func TestRemoveWaitsForTheStepUnderWay(t *testing.T) {
	var c Clock
	slow := &counter{interval: tick, slow: 30 * time.Millisecond}
	c.Add(slow, time.Now())
	for deadline := time.Now().Add(5 * time.Second); !slow.running.Load(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the item never stepped")
		}
	}
	c.Remove(slow)
	if slow.running.Load() {
		t.Fatal("Remove returned while the item's step still ran")
	}
}

// A step that panics reaches its owner, not the clock: the other items keep
// stepping and the broken one steps no more.
func TestAPanicGoesToItsOwner(t *testing.T) {
	var c Clock
	broken := &counter{interval: tick, panicAt: 2, panicked: make(chan any, 1)}
	fine := &counter{interval: tick}
	c.Add(broken, time.Now())
	c.Add(fine, time.Now())
	defer c.Remove(fine)
	select {
	case r := <-broken.panicked:
		if r != "step broke" {
			t.Fatalf("StepPanicked got %v", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the step's panic never reached its owner")
	}
	if c.Has(broken) {
		t.Error("the clock still steps the item that panicked")
	}
	before := fine.steps.Load()
	time.Sleep(3 * tick)
	if fine.steps.Load() == before {
		t.Error("the clock stopped stepping the other item")
	}
}
