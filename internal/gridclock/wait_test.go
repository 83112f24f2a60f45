package gridclock

import (
	"sync"
	"testing"
	"time"
)

// TestWaitersShareTheGridPoint: waits begun at different moments between two
// points of the grid end at the same point, after it — the wake-up they share.
func TestWaitersShareTheGridPoint(t *testing.T) {
	const step = time.Second
	first, ok := Wait(nil, time.NewTimer(time.Hour), step) // just past a point: the next is a step away
	if !ok {
		t.Fatal("Wait ended without a done channel")
	}
	var wg sync.WaitGroup
	points := make([]time.Time, 3)
	late := make([]bool, len(points))
	for i := range points {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i) * 40 * time.Millisecond)
			late[i] = !time.Now().Before(first.Add(step)) // a stalled box: it began past the next point
			at, ok := Wait(nil, time.NewTimer(time.Hour), step)
			if !ok {
				t.Error("Wait ended without a done channel")
			}
			if now := time.Now(); now.Before(at) {
				t.Errorf("waiter %d returned at %v, before its point %v", i, now, at)
			}
			points[i] = at
		}()
	}
	wg.Wait()
	for i, at := range points {
		if off := at.Sub(origin) % step; off != 0 {
			t.Errorf("waiter %d's point %v is %v off the grid", i, at, off)
		}
		if late[i] {
			t.Logf("waiter %d began after the point the others waited for: not compared", i)
			continue
		}
		if want := first.Add(step); !at.Equal(want) {
			t.Errorf("waiter %d woke for %v, want the next point %v: not one wake-up", i, at, want)
		}
	}
}

func TestWaitEndsWhenDone(t *testing.T) {
	done := make(chan struct{})
	close(done)
	start := time.Now()
	if _, ok := Wait(done, time.NewTimer(time.Hour), time.Hour); ok {
		t.Fatal("Wait went on after done closed")
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("Wait took %v to see done", d)
	}
}

// TestEveryRunsOnTheGridUntilDone: f runs once per grid point, never before
// it, and not again once done is closed.
func TestEveryRunsOnTheGridUntilDone(t *testing.T) {
	const step = 100 * time.Millisecond
	done := make(chan struct{})
	var runs []time.Time
	Every(done, step, func() {
		runs = append(runs, time.Now())
		if len(runs) == 3 {
			close(done)
		}
	})
	if len(runs) != 3 {
		t.Fatalf("f ran %d times, want 3 (it stops once done closes)", len(runs))
	}
	for i := 1; i < len(runs); i++ {
		a, b := runs[i-1].Sub(origin)/step, runs[i].Sub(origin)/step
		if b <= a {
			t.Errorf("runs %d and %d fell in one grid interval (%v, %v)", i-1, i, runs[i-1], runs[i])
		}
	}
}
