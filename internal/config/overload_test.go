package config

import (
	"strings"
	"testing"
)

func TestOverloadThresholds(t *testing.T) {
	cases := []struct {
		args []string
		err  string // "" for valid
	}{
		{nil, ""},
		{[]string{"--overload-cpu", "0.9", "--underload-cpu", "0.5"}, ""},
		{[]string{"--overload-cpu", "1.5"}, "overload-cpu: 1.5"},
		{[]string{"--underload-cpu", "0.9"}, "underload-cpu: 0.9"},
		{[]string{"--underload-cpu", "0"}, "underload-cpu: 0"},
	}
	for _, tc := range cases {
		cfg, err := Load(tc.args, func(string) string { return "" })
		if tc.err == "" {
			if err != nil {
				t.Errorf("%v: %v", tc.args, err)
			} else if tc.args == nil && (cfg.OverloadCPU != 0.85 || cfg.UnderloadCPU != 0.6 || !cfg.Overload) {
				t.Errorf("defaults %v %v %v", cfg.Overload, cfg.OverloadCPU, cfg.UnderloadCPU)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%v: error %v, want one naming %q", tc.args, err, tc.err)
		}
	}
	if _, err := Load([]string{"--overload-cpu", "lots"}, func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), "not a number") {
		t.Errorf("a non-number: %v", err)
	}
}
