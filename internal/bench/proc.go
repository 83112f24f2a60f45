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
	At      time.Time
	User    time.Duration // utime of all the process's threads, clock-tick resolution (10 ms)
	System  time.Duration // stime
	RSS     uint64        // VmRSS, bytes
	PeakRSS uint64        // VmHWM, bytes
	// RSS's parts: the process's own memory (heap, stacks, runtime) and the
	// file pages it maps (the binary's code and tables, the C library). How
	// much of the binary the kernel maps depends on how its page cache was
	// filled, not on the process (docs/performance-history.md, "RSS and the page cache").
	AnonRSS, FileRSS uint64  // RssAnon, RssFile, bytes
	Switches         uint64  // voluntary + involuntary context switches
	Host             HostCPU // the whole machine's CPU time at the same moment
}

// HostCPU is the machine's CPU time from the first line of /proc/stat, in
// clock ticks summed over its CPUs: the time its virtual CPUs wanted to run
// (busy: all but idle and iowait, steal included), and of it what the
// hypervisor ran other guests in instead (steal). On a shared host the same
// work costs more CPU time while steal is high (caches and cores shared with
// other guests): measured here, a meeting-8 floor took 4.8 µs per packet in
// one hour and 20 µs in another, with a fifth of the time stolen.
type HostCPU struct {
	Busy, Steal uint64
}

// StealPercent is the share of the machine's busy time stolen between a and b
// (0 when unknown): of the time its CPUs wanted to run, how much they waited.
// Taken over busy time, not all time, so that a window that runs more (the
// SFU and its load generator against the floor) does not show more steal
// for that alone.
func StealPercent(a, b HostCPU) float64 {
	if b.Busy <= a.Busy || b.Steal < a.Steal {
		return 0
	}
	return 100 * float64(b.Steal-a.Steal) / float64(b.Busy-a.Busy)
}

// parseHostCPU reads the aggregate "cpu" line of /proc/stat: user, nice,
// system, idle, iowait, irq, softirq, steal, … (guest time is already in
// user and nice, so it is not added again).
func parseHostCPU(stat []byte) (HostCPU, error) {
	line, _, _ := bytes.Cut(stat, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 9 || f[0] != "cpu" {
		return HostCPU{}, fmt.Errorf("/proc/stat: no aggregate cpu line with steal time")
	}
	var h HostCPU
	for i, v := range f[1:9] {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return HostCPU{}, fmt.Errorf("/proc/stat: field %d: %w", i+1, err)
		}
		switch i {
		case 3, 4: // idle, iowait
		case 7:
			h.Steal = n
			h.Busy += n
		default:
			h.Busy += n
		}
	}
	return h, nil
}

// ReadHostCPU reads the machine's CPU time (Linux).
func ReadHostCPU() (HostCPU, error) {
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return HostCPU{}, err
	}
	return parseHostCPU(stat)
}

// clockTick is USER_HZ, which Linux fixes at 100 for /proc.
const clockTick = 10 * time.Millisecond

// CPU is user plus system time.
func (s ProcStats) CPU() time.Duration { return s.User + s.System }

// ReadProc reads pid's CPU and memory figures.
func ReadProc(pid int) (ProcStats, error) {
	s := ProcStats{At: time.Now()}
	s.Host, _ = ReadHostCPU() // a machine without it reports no steal
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
		case "RssAnon":
			s.AnonRSS = n << 10
		case "RssFile":
			s.FileRSS = n << 10
		case "voluntary_ctxt_switches", "nonvoluntary_ctxt_switches":
			s.Switches += n
		}
	}
	return s, nil
}
