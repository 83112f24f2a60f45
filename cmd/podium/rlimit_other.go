//go:build !unix

package main

import "log/slog"

// logOpenFiles has nothing to report where there is no RLIMIT_NOFILE.
func logOpenFiles(*slog.Logger) {}
