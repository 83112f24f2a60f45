package memtrim

import (
	"strconv"
	"strings"
)

// mapping is one line of /proc/self/maps (or smaps) naming a file.
type mapping struct {
	start, end uintptr
	writable   bool
	path       string
	rss        uint64 // bytes resident (smaps)
}

// parseMapping reads a mapping's line, "start-end perms offset dev inode
// path"; other lines (smaps' fields) are not mappings.
func parseMapping(line string) (mapping, bool) {
	f := strings.Fields(line)
	if len(f) < 6 || len(f[1]) != 4 {
		return mapping{}, false
	}
	lo, hi, ok := strings.Cut(f[0], "-")
	if !ok {
		return mapping{}, false
	}
	start, err1 := strconv.ParseUint(lo, 16, 64)
	end, err2 := strconv.ParseUint(hi, 16, 64)
	if err1 != nil || err2 != nil || end <= start {
		return mapping{}, false
	}
	return mapping{start: uintptr(start), end: uintptr(end), writable: f[1][1] == 'w',
		path: strings.Join(f[5:], " ")}, true
}

// kilobytes reads the number in an smaps field's value, "   256 kB"; 0 if there is none.
func kilobytes(v []byte) uint64 {
	var n uint64
	seen := false
	for _, c := range v {
		switch {
		case c >= '0' && c <= '9':
			n, seen = n*10+uint64(c-'0'), true
		case seen:
			return n
		}
	}
	return n
}
