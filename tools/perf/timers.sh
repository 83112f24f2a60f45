#!/usr/bin/env bash
# Counts what the Go runtime woke the server's goroutines for, from a Go
# execution trace (docs/performance.md, "Beyond the floor"): each goroutine the
# scheduler itself made runnable — a socket ready or a timer due, not another
# goroutine's send — by where it had blocked, a second. Usage:
#   ./bin/podium bench forward --scenario S --warmup 10s --duration 10s --floor-duration 0 --quiet --trace s.trace
#   tools/perf/timers.sh s.trace
# These are goroutines made runnable, not wake-ups of the process: goroutines
# whose timers fall on one grid (gridclock) share one wake-up
# (tools/perf/wakeups.sh counts those). A goroutine that blocked before the
# trace began shows no place.
set -euo pipefail
go tool trace -d=parsed "$1" 2>/dev/null | awk '
function flush() {
	if (hdr == "") return
	if (match(hdr, /Time=[0-9]+/)) {
		t = substr(hdr, RSTART + 5, RLENGTH - 5) + 0
		if (first == 0) first = t
		last = t
	}
	if (hdr ~ /StateTransition/ && match(hdr, /GoID=[0-9]+/)) {
		g = substr(hdr, RSTART + 5, RLENGTH - 5)
		if (hdr ~ /Running->Waiting/) at[g] = place
		else if (hdr ~ /Waiting->Runnable/ && hdr ~ / G=-1 /) {
			p = g in at ? at[g] : "(blocked before the trace)"
			n[p == "" ? "(the runtime'"'"'s own: its trace reader, its scavenger)" : p]++
		}
	}
	hdr = ""; place = ""; depth = 0
}
/^M=/ { flush(); hdr = $0; next }
/^\t[^\t]/ {
	f = $1
	# the first two frames of ours or a library, past the runtime and the
	# standard library'"'"'s waiting (select, channels, poll, sleep)
	if (f ~ /^(runtime[.\/]|internal\/|sync[.\/]|time\.|net[.\/]|os\.)/) next
	if (depth < 2) { place = place (depth ? " < " : "") f; depth++ }
	next
}
END {
	flush()
	secs = (last - first) / 1e9
	if (secs <= 0) { print "no events"; exit 1 }
	printf "%.1f s of trace\n", secs
	for (p in n) printf "%8.1f /s  %s\n", n[p] / secs, p | "sort -rn"
}'
