package bench

import (
	"runtime"
	"testing"
)

// A collection since the last call shows its stop; none, nothing.
func TestGCStopsSinceTheLastCall(t *testing.T) {
	var g gcStops
	g.maxSince()
	runtime.GC()
	if got := g.maxSince(); got <= 0 || got > 1 {
		t.Fatalf("longest stop %v s after a GC, want a small positive time", got)
	}
	if got := g.maxSince(); got != 0 {
		t.Fatalf("longest stop %v s with no GC since the last call, want 0", got)
	}
}
