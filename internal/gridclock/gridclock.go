// Package gridclock runs many items' periodic steps on one goroutine. Each
// step says when the next is due, and the clock puts it on that interval's
// grid, so the items that wait alike step together: one wake-up per grid
// point for the whole server rather than one per connection. A wake-up of an
// otherwise idle server costs far more than the steps themselves, and a step
// only needs to come about once per interval (it reads the time it runs at).
package gridclock

import (
	"sync"
	"time"
)

// Stepper is an item the clock steps.
type Stepper interface {
	// Step runs at now and says how long until the next step; ok false
	// ends the item's steps.
	Step(now time.Time) (next time.Duration, ok bool)
	// StepPanicked receives a panic of Step, for the item's owner to raise
	// where it belongs; the item steps no more. It must not block.
	StepPanicked(r any)
}

// Shared is the server's clock: the pacers and the feedback senders wait on
// the same grids, so they share their wake-ups.
var Shared Clock

// Clock steps its items on one goroutine, which runs while it has any. The
// zero value is ready for use.
type Clock struct {
	mu    sync.Mutex
	due   map[Stepper]time.Time
	wake  chan struct{} // an item was added: look again
	alive bool          // the goroutine runs
	// round is held while steps run: an item that was removed waits on it,
	// so that none of its steps follows Remove.
	round sync.Mutex
	// rounds with a step and steps run, under mu (what coalescing bought).
	rounds, steps uint64
}

// origin is the grids' origin: Sub between times that carry the monotonic
// clock's reading, so a step of the wall clock moves no item's next step.
var origin = time.Now()

// OnGrid is the first point of step's grid after now.
func OnGrid(now time.Time, step time.Duration) time.Time {
	return origin.Add((now.Sub(origin)/step + 1) * step)
}

// Add has s step first at first (put it on a grid: OnGrid).
func (c *Clock) Add(s Stepper, first time.Time) {
	c.mu.Lock()
	if c.due == nil {
		c.due = map[Stepper]time.Time{}
		c.wake = make(chan struct{}, 1)
	}
	c.due[s] = first
	start := !c.alive
	c.alive = true
	wake := c.wake
	c.mu.Unlock()
	if start {
		go c.run()
	}
	select {
	case wake <- struct{}{}:
	default:
	}
}

// Remove ends s's steps; when it returns, no step of s runs.
func (c *Clock) Remove(s Stepper) {
	c.mu.Lock()
	delete(c.due, s)
	c.mu.Unlock()
	c.round.Lock()   // a round that took s before it left has finished
	c.round.Unlock() //nolint:staticcheck // an empty critical section: a wait
}

// Has says whether s is still stepped.
func (c *Clock) Has(s Stepper) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.due[s]
	return ok
}

// Counts is the rounds that had a step and the steps run so far.
func (c *Clock) Counts() (rounds, steps uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rounds, c.steps
}

// Running says whether the clock's goroutine runs.
func (c *Clock) Running() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.alive
}

// run steps the items that are due, then sleeps until the next is; it ends
// when no item is left.
func (c *Clock) run() {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	var due []Stepper
	for {
		c.round.Lock()
		now := time.Now()
		c.mu.Lock()
		if len(c.due) == 0 {
			c.alive = false
			c.mu.Unlock()
			c.round.Unlock()
			return
		}
		due = due[:0]
		for s, at := range c.due {
			if !at.After(now) {
				due = append(due, s)
			}
		}
		if len(due) > 0 {
			c.rounds++
			c.steps += uint64(len(due))
		}
		wake := c.wake
		c.mu.Unlock()
		for _, s := range due {
			step, ok, broke := c.step(s, now)
			c.mu.Lock()
			if _, in := c.due[s]; in && ok {
				c.due[s] = OnGrid(now, step)
			} else {
				delete(c.due, s)
			}
			c.mu.Unlock()
			if broke != nil { // told once it steps no more: its owner may check
				s.StepPanicked(broke)
			}
		}
		clear(due)
		c.mu.Lock()
		next := time.Time{}
		for _, at := range c.due {
			if next.IsZero() || at.Before(next) {
				next = at
			}
		}
		c.mu.Unlock()
		c.round.Unlock()
		wait := time.Duration(0) // none left: the next turn ends the goroutine
		if !next.IsZero() {
			wait = max(time.Until(next), 0)
		}
		t.Reset(wait)
		select {
		case <-t.C:
		case <-wake:
		}
	}
}

// step runs s's step. A step that panics is not the clock's to die of: the
// panic is returned (broke), for run to take s out and then hand it to s's
// owner (StepPanicked).
func (c *Clock) step(s Stepper, now time.Time) (next time.Duration, ok bool, broke any) {
	defer func() {
		if r := recover(); r != nil {
			ok, broke = false, r
		}
	}()
	next, ok = s.Step(now)
	return next, ok, nil
}
