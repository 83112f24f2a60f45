package e2e

import (
	"fmt"
	"os"
	"testing"
)

// Some browser tests measure an issue's targets (issue 22: the share beside
// TCP, adaptation under delay and jitter; resolved on runs recorded in
// docs/adaptation.md) that a busy 2-core box does not meet in every run. A
// missed target is printed on a "TARGET NOT MET" line with its figures, and
// fails the test only with PODIUM_STRICT_TARGETS=1 (the command that judged
// the issue). The same tests also hold guards — floors the code keeps with
// margin on such a box — which always fail: a regression (video suspended for
// minutes, the flows not running) turns CI red.
func issueTarget(t *testing.T, met bool, issue int, format string, args ...any) {
	t.Helper()
	if met {
		return
	}
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("PODIUM_STRICT_TARGETS") == "1" {
		t.Errorf("issue %d target: %s", issue, msg)
		return
	}
	t.Logf("TARGET NOT MET (issue %d, PODIUM_STRICT_TARGETS=1 fails on it): %s", issue, msg)
}
