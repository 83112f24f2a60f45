//go:build !race

package forward

import (
	"testing"

	"github.com/podium-sfu/podium/internal/algo/bwe"
)

// TestPrefetchAheadDoesNotAllocate: the fan-out's hints read every kind of
// destination without a fault — bound with a link, bound without one,
// unbound, linked but unbound — and allocate nothing. (Race builds compile
// the hints out; this runs with the zero-allocation tests.)
func TestPrefetchAheadDoesNotAllocate(t *testing.T) {
	f := newFixture(t, 4, true)
	plain := newFixture(t, 2, false)
	unbound := NewDownTrack(f.up, "rUnbound")
	linkedUnbound := NewDownTrack(f.up, "rLinkedUnbound")
	linkedUnbound.SetLink(NewLink(bwe.DefaultConfig()))
	downs := append(append(f.downs, plain.downs...), unbound, linkedUnbound)
	for range 100 { // the rings fill and wrap
		f.step()
	}
	allocs := testing.AllocsPerRun(100, func() {
		for i := range downs {
			prefetchAhead(downs, i)
		}
	})
	if allocs != 0 {
		t.Errorf("prefetchAhead allocates %.1f times per fan-out", allocs)
	}
}
