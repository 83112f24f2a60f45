package server

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// usableCores is how many cores the process may use: the CPUs it may run on
// (runtime.NumCPU follows the affinity mask), or fewer under a cgroup CPU
// quota (a container's --cpus), cgroup v2 or v1.
func usableCores() float64 {
	cores := float64(runtime.NumCPU())
	if q, ok := cgroupQuota(); ok && q < cores {
		return q
	}
	return cores
}

// cgroupQuota reads the CPU quota of the process's cgroup, in cores; false
// when there is none or it cannot be read. Inside a container's cgroup
// namespace its own cgroup is the mount's root, which is tried last.
func cgroupQuota() (float64, bool) {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" { // v2: cpu.max is "QUOTA PERIOD" or "max PERIOD"
			for _, dir := range []string{filepath.Join("/sys/fs/cgroup", parts[2]), "/sys/fs/cgroup"} {
				if b, err := os.ReadFile(filepath.Join(dir, "cpu.max")); err == nil {
					f := strings.Fields(string(b))
					if len(f) == 2 {
						return ratio(f[0], f[1])
					}
				}
			}
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c != "cpu" {
				continue
			}
			for _, dir := range []string{filepath.Join("/sys/fs/cgroup/cpu", parts[2]), "/sys/fs/cgroup/cpu"} {
				q, err1 := os.ReadFile(filepath.Join(dir, "cpu.cfs_quota_us"))
				p, err2 := os.ReadFile(filepath.Join(dir, "cpu.cfs_period_us"))
				if err1 == nil && err2 == nil {
					return ratio(strings.TrimSpace(string(q)), strings.TrimSpace(string(p)))
				}
			}
		}
	}
	return 0, false
}

// ratio is quota/period for a quota that is set ("max" and -1 are none).
func ratio(quota, period string) (float64, bool) {
	q, err1 := strconv.ParseFloat(quota, 64)
	p, err2 := strconv.ParseFloat(period, 64)
	if err1 != nil || err2 != nil || q <= 0 || p <= 0 {
		return 0, false
	}
	return q / p, true
}
