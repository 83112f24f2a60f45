package gridclock

import "time"

// Wait blocks until the next point of step's grid (OnGrid) and returns it, or
// returns false once done is closed. t is the caller's timer, reused from one
// wait to the next. A periodic task of every connection that waits on the same
// grid fires with the others: one wake-up of the server per point for all of
// them, where tickers started as each connection did wake it once each.
func Wait(done <-chan struct{}, t *time.Timer, step time.Duration) (time.Time, bool) {
	at := OnGrid(time.Now(), step)
	t.Reset(time.Until(at))
	select {
	case <-done:
		t.Stop()
		return time.Time{}, false
	case <-t.C:
		return at, true
	}
}

// Every runs f at each point of step's grid (Wait) until done is closed, on
// the caller's goroutine: a task that may block (a system call, a lock, a
// stop of the world) waits on the grid without holding up the shared clock's
// steps.
func Every(done <-chan struct{}, step time.Duration, f func()) {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		if _, ok := Wait(done, t, step); !ok {
			return
		}
		f()
	}
}
