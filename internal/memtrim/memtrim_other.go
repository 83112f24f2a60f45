//go:build !linux

package memtrim

// StartupPages does nothing here: the trimming needs Linux's madvise and /proc.
func StartupPages() (uint64, error) { return 0, nil }
