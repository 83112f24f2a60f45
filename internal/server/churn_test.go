package server

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/podium-sfu/podium/internal/client"
	"github.com/podium-sfu/podium/internal/config"
)

// Churn tolerances: after 200 participants have come and gone, the server must
// be back where it started, up to goroutines that come and go on their own
// (timers, idle HTTP connections) and heap the runtime keeps (pion's buffer
// pools, the race detector's bookkeeping, map buckets that never shrink).
const (
	churnParticipants  = 200
	churnBatch         = 10 // at once in one room: 2 publishers, 8 receivers
	churnRooms         = 4  // rooms churning side by side
	churnGoroutineSlop = 5
	churnHeapSlop      = 4 << 20 // bytes of live heap
)

// TestChurn: 200 participants join and leave against one server, in batches of
// ten in one room (two publishing, two receiving their media over ICE/DTLS/SRTP,
// six leaving as soon as the media was offered to them), half saying goodbye and
// half just dropping the connection. Afterwards goroutines return to the
// baseline within 5 and the live heap within 4 MiB.
func TestChurn(t *testing.T) {
	if testing.Short() {
		t.Skip("churn takes about a minute with the race detector; make test runs it")
	}
	srv := startServerWith(t, Options{}, func(c *config.Config) { c.JoinsPerIP = 0 })
	// batch runs one room's join, media and leave; it runs on other goroutines
	// than the test's, so it returns errors rather than failing the test.
	batch := func(n int) error {
		room := fmt.Sprint("churn", n%churnRooms)
		cls := make([]*client.Client, churnBatch)
		defer func() { // on success they have left already: Close is then a no-op
			for _, cl := range cls {
				if cl != nil {
					cl.Close()
				}
			}
		}()
		errs := make([]error, churnBatch)
		var wg sync.WaitGroup
		for i := range cls {
			wg.Add(1)
			go func() {
				defer wg.Done()
				cls[i], errs[i] = dialNoCleanup(srv, room, fmt.Sprintf("C%d-%d", n, i), i < 2)
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return err
		}
		pubs := []string{cls[0].Snapshot().ID, cls[1].Snapshot().ID}
		wait := func(cl *client.Client, what string, cond func(*client.State) bool) error {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if err := cl.Wait(ctx, cond); err != nil {
				return fmt.Errorf("%s: %s: %w", cl.Snapshot().ID, what, err)
			}
			return nil
		}
		if err := errors.Join(
			wait(cls[0], "publisher receives the other", receiving(pubs[1])),
			wait(cls[1], "publisher receives the other", receiving(pubs[0]))); err != nil {
			return err
		}
		// Two receivers wait for media; the others leave as soon as they were
		// offered it, often mid-handshake, which is churn too.
		for i, cl := range cls[2:] {
			cond := receiving(pubs...)
			if i >= 2 {
				cond = func(s *client.State) bool { return s.Offers > 0 && present(pubs[0])(s) && present(pubs[1])(s) }
			}
			if err := wait(cl, "receiver offered or receiving both publishers", cond); err != nil {
				return err
			}
		}
		for i, cl := range cls {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if i%2 == 0 {
					cl.Leave()
				} else {
					cl.Close()
				}
			}()
		}
		wg.Wait()
		deadline := time.Now().Add(20 * time.Second)
		for {
			if _, ok := srv.Hub().Room(room); !ok {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("room %s did not end", room)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	if err := batch(0); err != nil { // the first use starts what lives as long as the server
		t.Fatal(err)
	}
	goroutines, heap := settledGoroutines(), liveHeap()
	start := time.Now()
	for n := 1; n <= churnParticipants/churnBatch; n += churnRooms {
		var wg sync.WaitGroup
		errs := make([]error, churnRooms)
		for k := range churnRooms {
			wg.Add(1)
			go func() { defer wg.Done(); errs[k] = batch(n + k) }()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d participants joined, exchanged media and left in %v", churnParticipants, time.Since(start).Round(time.Millisecond))
	if rooms, sessions := len(srv.Hub().Rooms()), srv.Hub().Sessions(); rooms != 0 || sessions != 0 {
		t.Errorf("%d rooms and %d sessions left", rooms, sessions)
	}
	waitUntil(t, "every signaling connection to close", 10*time.Second, func() bool { return srv.counters.Open.Load() == 0 })

	expectGoroutinesWithin(t, "after the churn", goroutines, churnGoroutineSlop, 15*time.Second)
	after := liveHeap()
	t.Logf("live heap: %.1f MiB before, %.1f MiB after (tolerance %d MiB)", float64(heap)/(1<<20), float64(after)/(1<<20), churnHeapSlop>>20)
	if after > heap+churnHeapSlop {
		t.Errorf("live heap grew from %d to %d bytes, more than %d", heap, after, churnHeapSlop)
	}
}

// liveHeap is the heap in use by live objects after a full collection.
func liveHeap() uint64 {
	var m runtime.MemStats
	for range 3 {
		runtime.GC()
	}
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// expectGoroutinesWithin is expectGoroutines with another tolerance.
func expectGoroutinesWithin(t *testing.T, when string, want, slop int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	n := runtime.NumGoroutine()
	for n > want+slop && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond) // polling a count: there is nothing to wait on
		n = runtime.NumGoroutine()
	}
	t.Logf("%s: %d goroutines (baseline %d, tolerance %d)", when, n, want, slop)
	if n > want+slop {
		buf := make([]byte, 1<<20)
		t.Errorf("%s: %d goroutines, want at most %d+%d; stacks:\n%s", when, n, want, slop, buf[:runtime.Stack(buf, true)])
	}
}

// dialNoCleanup is dial without t.Cleanup, which would keep every client alive
// (and on the heap) until the test ends; the caller closes it.
func dialNoCleanup(s *Server, room, name string, publish bool) (*client.Client, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, client.Options{URL: wsURL(s), Room: room, Name: name, Publish: publish})
	if err != nil {
		return nil, fmt.Errorf("%s joins %s: %w", name, room, err)
	}
	return c, nil
}
