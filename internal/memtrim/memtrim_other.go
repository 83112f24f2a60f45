//go:build !linux

package memtrim

// ExecutablePages does nothing here: the trimming needs Linux's madvise and /proc.
func ExecutablePages() (uint64, error) { return 0, nil }
