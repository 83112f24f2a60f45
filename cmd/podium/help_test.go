package main

import (
	"strings"
	"testing"
)

// TestHelpExitsZero (issue 17, item 7): asking for usage is no error.
func TestHelpExitsZero(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"serve", "--help"}, {"serve", "-h"}, {"token", "--help"}, {"load", "-h"}, {"bench", "-h"}} {
		cmd, stderr := command(t, args...)
		var stdout syncBuffer
		cmd.Stdout = &stdout
		if err := cmd.Run(); err != nil {
			t.Errorf("podium %s: %v; stderr %q", strings.Join(args, " "), err, stderr.String())
		}
		if out := stdout.String() + stderr.String(); !strings.Contains(strings.ToLower(out), "usage") && !strings.Contains(out, "-http") && !strings.Contains(out, "-room") {
			t.Errorf("podium %s printed no usage: %q", strings.Join(args, " "), out)
		}
	}
	cmd, _ := command(t, "token", "--no-such-flag")
	if err := cmd.Run(); err == nil {
		t.Error("a bad flag exits 0")
	}
}
