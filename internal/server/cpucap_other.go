//go:build !linux

package server

import "runtime"

// usableCores is how many cores the process may use (no cgroups here).
func usableCores() float64 { return float64(runtime.NumCPU()) }
