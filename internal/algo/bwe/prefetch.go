package bwe

import (
	"unsafe"

	"github.com/podium-sfu/podium/internal/prefetch"
)

// PrefetchNextSend asks for the history slot the next OnQueued or OnSent
// writes (a hint to the processor; it changes nothing). It reads without the
// owner's lock, so a racing caller may ask for a stale line.
func (e *Estimator) PrefetchNextSend() {
	// Masked by the slice's own length (a power of two), not h.mask: a read
	// racing a grow may ask for the wrong line, never index out of range.
	if s := e.hist.slots; len(s) > 0 {
		prefetch.Lines(unsafe.Pointer(&s[(e.hist.last+1)&int64(len(s)-1)]), 1)
	}
}
