package memtrim

import (
	"bufio"
	"bytes"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// ExecutablePages unmaps the executable's read-only file mappings and reports
// how many bytes of them were resident before.
func ExecutablePages() (resident uint64, err error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	// Read as bytes: only the executable's lines become strings, so a trim
	// allocates next to nothing however many mappings the process has.
	suffix := []byte(" " + exe)
	var ranges []mapping
	var cur *mapping
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			continue
		}
		if c := line[0]; c >= '0' && c <= '9' || c >= 'a' && c <= 'f' { // a mapping; fields start upper-case
			cur = nil
			if !bytes.HasSuffix(line, suffix) {
				continue
			}
			if m, ok := parseMapping(string(line)); ok && m.path == exe && !m.writable {
				ranges = append(ranges, m)
				cur = &ranges[len(ranges)-1]
			}
			continue
		}
		if cur != nil && bytes.HasPrefix(line, []byte("Rss:")) {
			cur.rss = kilobytes(line[len("Rss:"):]) << 10
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	for _, m := range ranges {
		// The raw call: the range is an address from /proc, not a Go slice.
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, m.start, m.end-m.start, unix.MADV_DONTNEED); errno != 0 {
			return resident, fmt.Errorf("madvise %x-%x: %w", m.start, m.end, errno)
		}
		resident += m.rss
	}
	return resident, nil
}
