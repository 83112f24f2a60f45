package prefetch

import "unsafe"

// Lines asks for the n cache lines from p on (PREFETCHT0). Never faults: p
// may be anything, nil included.
//
//go:noescape
func Lines(p unsafe.Pointer, n int)

// LinesFrom asks for the n cache lines from line `from` of p's object on. The
// address is made here, not by the caller: a Go pointer past the end of its
// object could trip the collector, a prefetch cannot.
//
//go:noescape
func LinesFrom(p unsafe.Pointer, from, n int)
