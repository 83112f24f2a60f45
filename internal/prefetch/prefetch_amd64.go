package prefetch

import "unsafe"

// Lines asks for the n cache lines from p on (PREFETCHT0). Never faults: p
// may be anything, nil included.
//
//go:noescape
func Lines(p unsafe.Pointer, n int)
