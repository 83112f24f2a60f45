//go:build !amd64

package prefetch

import "unsafe"

// Lines does nothing where we have no prefetch instruction written.
func Lines(p unsafe.Pointer, n int) {}

// LinesFrom does nothing where we have no prefetch instruction written.
func LinesFrom(p unsafe.Pointer, from, n int) {}
