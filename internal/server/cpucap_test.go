package server

import (
	"runtime"
	"testing"
)

func TestCgroupQuotaRatio(t *testing.T) {
	cases := []struct {
		quota, period string
		want          float64
		ok            bool
	}{
		{"150000", "100000", 1.5, true}, // v2 cpu.max "150000 100000", a container's --cpus 1.5
		{"15000", "100000", 0.15, true}, // v1 cfs_quota_us / cfs_period_us
		{"max", "100000", 0, false},     // v2: no quota
		{"-1", "100000", 0, false},      // v1: no quota
		{"x", "y", 0, false},
	}
	for _, c := range cases {
		if got, ok := ratio(c.quota, c.period); got != c.want || ok != c.ok {
			t.Errorf("ratio(%q, %q) = %v, %v; want %v, %v", c.quota, c.period, got, ok, c.want, c.ok)
		}
	}
	if n := usableCores(); n <= 0 || n > float64(runtime.NumCPU()) {
		t.Errorf("usableCores %v, NumCPU %d", n, runtime.NumCPU())
	} else {
		t.Logf("usable cores here: %v", n)
	}
}
