package forward

import (
	"testing"
	"time"

	"github.com/podium-sfu/podium/internal/algo/bwe"
	"github.com/podium-sfu/podium/internal/gridclock"
)

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
	_, before := gridclock.Shared.Counts()
	if gridclock.Shared.Has((*pacerSteps)(broken)) {
		t.Error("the clock still steps the Link that panicked")
	}
	time.Sleep(3 * idleTick)
	if _, after := gridclock.Shared.Counts(); after == before {
		t.Error("the clock stopped stepping the other Link")
	}
}
