//go:build linux

package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// traceDownlink appends the receiver's downlink state from the admin API
// (estimate, its parts, probes, overuses, the latest switch events) with the
// time and phase to $PODIUM_TCPSHARE_TRACE, one line a call (every 200 ms):
// it told the allocator's back-off from a slow estimate (docs/bwe.md).
func (s *shareRun) traceDownlink(phase string) {
	path := os.Getenv("PODIUM_TCPSHARE_TRACE")
	if path == "" {
		return
	}
	d, _, err := downlinkOf(s.srv.URL(), s.room, "Receiver")
	if err != nil || d == nil {
		return
	}
	b, _ := json.Marshal(d)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	fmt.Fprintf(f, "%s %s %s\n", time.Now().UTC().Format("15:04:05.000"), phase, b)
	f.Close()
}
