//go:build unix

package main

import (
	"log/slog"
	"syscall"
)

// minOpenFiles is the limit below which serve warns: every HTTP connection,
// signaling WebSocket and ICE-TCP connection holds a file descriptor.
const minOpenFiles = 4096

// logOpenFiles reports the open files limit (README "Operations"). The Go
// runtime has already raised the soft limit to the hard one at start-up (os
// package, Go 1.19+), so what is left to do is to say when it is low.
func logOpenFiles(log *slog.Logger) {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		log.Warn("open files limit unknown", "err", err)
		return
	}
	if lim.Cur < minOpenFiles {
		log.Warn("open files limit is low: each connection needs a file descriptor; raise the hard limit (ulimit -Hn, systemd LimitNOFILE=)",
			"soft", lim.Cur, "hard", lim.Max, "want", minOpenFiles)
		return
	}
	log.Info("open files limit", "soft", lim.Cur, "hard", lim.Max)
}
