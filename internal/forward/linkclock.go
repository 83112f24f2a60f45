package forward

import (
	"sync"
	"time"
)

// linkClock runs every Link's pacer step (Link.tick) on one goroutine. Each
// step says when the next is due; the clock puts it on that step's grid
// (idleTick or probeTick), so the Links that wait alike step together: one
// wake-up per grid point for the whole server rather than one per receiver
// connection. A wake-up of an otherwise idle server costs far more than the
// steps themselves, and a step only needs to come about once per interval
// (it reads the time it runs at).
type linkClock struct {
	mu    sync.Mutex
	due   map[*Link]time.Time
	wake  chan struct{} // a Link was added: look again
	alive bool          // the goroutine runs
	// round is held while steps run: a Link that stopped waits on it, so that
	// none of its steps follows the end of its Run.
	round sync.Mutex
	// rounds with a step and steps run, under mu (what coalescing bought).
	rounds, steps uint64
}

var pacerClock = linkClock{wake: make(chan struct{}, 1)}

// gridStart is the grids' origin: Sub between times that carry the monotonic
// clock's reading, so a step of the wall clock moves no Link's next step.
var gridStart = time.Now()

// onGrid is the first point of step's grid after now.
func onGrid(now time.Time, step time.Duration) time.Time {
	return gridStart.Add((now.Sub(gridStart)/step + 1) * step)
}

func (c *linkClock) add(l *Link, now time.Time) {
	c.mu.Lock()
	if c.due == nil {
		c.due = map[*Link]time.Time{}
	}
	c.due[l] = now
	start := !c.alive
	c.alive = true
	c.mu.Unlock()
	if start {
		go c.run()
	}
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

func (c *linkClock) remove(l *Link) {
	c.mu.Lock()
	delete(c.due, l)
	c.mu.Unlock()
	c.round.Lock()   // a round that took l before it left has finished
	c.round.Unlock() //nolint:staticcheck // an empty critical section: a wait
}

// run steps the Links that are due, then sleeps until the next is; it ends
// when no Link is left.
func (c *linkClock) run() {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	var due []*Link
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
		for l, at := range c.due {
			if !at.After(now) {
				due = append(due, l)
			}
		}
		if len(due) > 0 {
			c.rounds++
			c.steps += uint64(len(due))
		}
		c.mu.Unlock()
		for _, l := range due {
			step, ok := c.step(l, now)
			c.mu.Lock()
			if _, in := c.due[l]; in && ok {
				c.due[l] = onGrid(now, step)
			} else {
				delete(c.due, l)
			}
			c.mu.Unlock()
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
		case <-c.wake:
		}
	}
}

// step runs l's step. A step that panics is not the clock's to die of: the
// panic goes to l's Run, on its connection's goroutine, and l steps no more.
func (c *linkClock) step(l *Link, now time.Time) (next time.Duration, ok bool) {
	defer func() {
		if r := recover(); r != nil {
			select {
			case l.stepPanic <- r:
			default:
			}
			ok = false
		}
	}()
	return l.tick(now), true
}
