//go:build !amd64

package prefetch

import "unsafe"

// Lines does nothing where we have no prefetch instruction written.
func Lines(p unsafe.Pointer, n int) {}
