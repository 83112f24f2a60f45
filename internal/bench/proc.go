package bench

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// ProcStats is a process's CPU time and memory from /proc (Linux).
type ProcStats struct {
	At       time.Time
	User     time.Duration // utime of all the process's threads, clock-tick resolution (10 ms)
	System   time.Duration // stime
	RSS      uint64        // VmRSS, bytes
	PeakRSS  uint64        // VmHWM, bytes
	Switches uint64        // voluntary + involuntary context switches
}

// clockTick is USER_HZ, which Linux fixes at 100 for /proc.
const clockTick = 10 * time.Millisecond

// CPU is user plus system time.
func (s ProcStats) CPU() time.Duration { return s.User + s.System }

// ReadProc reads pid's CPU and memory figures.
func ReadProc(pid int) (ProcStats, error) {
	s := ProcStats{At: time.Now()}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return s, err
	}
	// The command name may contain spaces and parentheses: fields start after the last ')'.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return s, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 13 {
		return s, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	// After the name: state(3) ... utime is field 14, stime 15 (1-based), so 11 and 12 here.
	ut, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return s, fmt.Errorf("/proc/%d/stat: bad times", pid)
	}
	s.User, s.System = time.Duration(ut)*clockTick, time.Duration(st)*clockTick
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		fields := strings.Fields(val)
		if len(fields) == 0 {
			continue
		}
		n, err := strconv.ParseUint(fields[0], 10, 64)
		if err != nil {
			continue
		}
		switch key {
		case "VmRSS":
			s.RSS = n << 10
		case "VmHWM":
			s.PeakRSS = n << 10
		case "voluntary_ctxt_switches", "nonvoluntary_ctxt_switches":
			s.Switches += n
		}
	}
	return s, nil
}
