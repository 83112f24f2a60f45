package main

import (
	"testing"
	"time"
)

func TestParseRate(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int // 0: an error
	}{
		{"3mbit", 3_000_000}, {"2.5Mbit", 2_500_000}, {"500kbit", 500_000}, {"1gbit", 1_000_000_000},
		{"64000", 64_000}, {"64000bit", 64_000}, {"", 0}, {"fast", 0}, {"-1mbit", 0}, {"0", 0}, {"3mb", 0},
	} {
		got, err := ParseRate(tc.in)
		if tc.want == 0 && err == nil || tc.want != 0 && (err != nil || got != tc.want) {
			t.Errorf("ParseRate(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}

func TestParse(t *testing.T) {
	cfg, err := parse([]string{"-listen", "127.0.0.1:9000", "-target", "127.0.0.1:7882", "-delay", "100ms",
		"-jitter", "30ms", "-loss", "0.02", "-rate", "3mbit", "-queue", "100ms", "-only", "down", "-allow", "10.0.0.2/32"})
	if err != nil {
		t.Fatal(err)
	}
	d := cfg.Down
	if d.Delay != 100*time.Millisecond || d.Jitter != 30*time.Millisecond || d.Loss != 0.02 || d.Rate != 3_000_000 ||
		d.QueueTime != 100*time.Millisecond || cfg.Up.Delay != 0 || cfg.Up.Rate != 0 || cfg.Allow.String() != "10.0.0.2/32" {
		t.Errorf("parsed %+v", cfg)
	}
	for _, bad := range [][]string{
		{"-delay", "1s"}, // no target
		{"-target", "127.0.0.1:1", "-only", "sideways"},
		{"-target", "127.0.0.1:1", "-rate", "lots"},
		{"-target", "127.0.0.1:1", "-allow", "10.0.0.2"},
		{"-target", "127.0.0.1:1", "extra"},
	} {
		if _, err := parse(bad); err == nil {
			t.Errorf("parse(%q): no error", bad)
		}
	}
}
