package prefetch

import (
	"testing"
	"unsafe"
)

// TestLinesNeverFaults: a prefetch is a hint, whatever the address: nil, no
// lines, and lines past the end of an object are all harmless. (Lines past it
// are computed inside Lines: a Go pointer outside its object could trip the
// collector.)
func TestLinesNeverFaults(t *testing.T) {
	b := make([]byte, 64)
	Lines(nil, 4)
	Lines(unsafe.Pointer(&b[0]), 0)
	Lines(unsafe.Pointer(&b[0]), -1)
	Lines(unsafe.Pointer(&b[0]), 64)           // 4 KB past a 64-byte object
	LinesFrom(unsafe.Pointer(&b[0]), 1<<14, 2) // a megabyte past it
	LinesFrom(nil, -1, 2)
	if n := testing.AllocsPerRun(100, func() { Lines(unsafe.Pointer(&b[0]), 2) }); n != 0 {
		t.Errorf("Lines allocates %.1f times", n)
	}
}
