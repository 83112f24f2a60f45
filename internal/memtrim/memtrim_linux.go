package memtrim

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// StartupPages unmaps the executable's read-only file mappings and reports
// how many bytes of them were resident before.
func StartupPages() (resident uint64, err error) {
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var ranges []mapping
	var cur *mapping
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if m, ok := parseMapping(line); ok {
			cur = nil
			if m.path == exe && !m.writable {
				ranges = append(ranges, m)
				cur = &ranges[len(ranges)-1]
			}
			continue
		}
		if cur != nil && strings.HasPrefix(line, "Rss:") {
			kb, _ := strconv.ParseUint(strings.Fields(line)[1], 10, 64)
			cur.rss = kb << 10
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
