package memtrim

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

func TestKilobytes(t *testing.T) {
	for v, want := range map[string]uint64{"   256 kB": 256, "0 kB": 0, " 12 kB 7": 12, "": 0, " kB": 0} {
		if got := kilobytes([]byte(v)); got != want {
			t.Errorf("kilobytes(%q) = %d, want %d", v, got, want)
		}
	}
}

func TestParseMapping(t *testing.T) {
	for line, want := range map[string]mapping{
		"00400000-00f3c000 r-xp 00000000 fd:01 1234   /usr/bin/podium": {start: 0x400000, end: 0xf3c000, path: "/usr/bin/podium"},
		"02600000-0263e000 rw-p 02200000 fd:01 1234   /usr/bin/podium": {start: 0x2600000, end: 0x263e000, writable: true, path: "/usr/bin/podium"},
		"7f00-8f00 r--p 00000000 fd:01 99 /tmp/a dir/with spaces":      {start: 0x7f00, end: 0x8f00, path: "/tmp/a dir/with spaces"},
	} {
		got, ok := parseMapping(line)
		if !ok || got != want {
			t.Errorf("%q: %+v %v, want %+v", line, got, ok, want)
		}
	}
	for _, line := range []string{
		"Rss:                 256 kB",
		"VmFlags: rd ex mr mw me dw sd",
		"7f00-8f00 rw-p 00000000 00:00 0", // anonymous: no path
		"8f00-7f00 r--p 00000000 fd:01 99 /x",
		"zz-8f00 r--p 00000000 fd:01 99 /x",
	} {
		if m, ok := parseMapping(line); ok {
			t.Errorf("%q parsed as %+v", line, m)
		}
	}
}

// The test binary's read-only pages are unmapped and its code still runs
// (it faults back in what it uses); nothing writable is touched.
func TestExecutablePagesLeavesTheProcessRunning(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Linux only")
	}
	data := map[string]int{"kept": 42} // heap and data survive
	before := residentPages(t)
	n, err := ExecutablePages()
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("nothing of the executable was resident")
	}
	after := residentPages(t)
	t.Logf("%d kB of the executable were resident; resident pages %d → %d", n>>10, before, after)
	if after >= before {
		t.Errorf("resident pages %d → %d: nothing unmapped", before, after)
	}
	if data["kept"] != 42 || strings.Repeat("a", 3) != "aaa" {
		t.Fatal("the process lost its data")
	}
}

func residentPages(t *testing.T) int {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(strings.Fields(string(b))[1])
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A trim reads the process's whole smaps (thousands of lines) but allocates
// only for the executable's few mappings: it runs inside benchmark windows.
func TestExecutablePagesAllocatesLittle(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Linux only")
	}
	n := testing.AllocsPerRun(3, func() { _, _ = ExecutablePages() })
	t.Logf("%.0f allocations per trim", n)
	if n > 40 {
		t.Errorf("%.0f allocations per trim, want ≤ 40", n)
	}
}
