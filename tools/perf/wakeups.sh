#!/usr/bin/env bash
# Counts a process's wake-ups by what woke each of its threads (docs/performance.md,
# "Beyond the floor"): a datagram delivered to its socket, on the same CPU or from
# the other one through an inter-processor interrupt (the sender's CPU queues the
# wake-up, the idle one runs it), or a timer (Go's netpoller sleeps until the next
# timer; the runtime's monitor thread sleeps on its own). Usage:
#   tools/perf/wakeups.sh PID [SECONDS]
# e.g. 18 s into ./bin/podium bench forward --scenario S --warmup 10s --duration 25s
# --floor-duration 0 --quiet, with PID "$(pgrep -f 'bench sfu')"; or 8 s into
# ./bin/podium bench floor --scenario S --duration 20s with "$(pgrep -f 'bench floorfwd')".
# Needs root (perf's sched:sched_wakeup tracepoint, system-wide).
set -euo pipefail
pid=$1
secs=${2:-4}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
ls "/proc/$pid/task" > "$dir/tids"
perf record -q -e sched:sched_wakeup -a -g -o "$dir/perf.data" -- sleep "$secs" >/dev/null 2>&1
ls "/proc/$pid/task" >> "$dir/tids" 2>/dev/null || true # threads started meanwhile
perf script -i "$dir/perf.data" 2>/dev/null | awk -v secs="$secs" -v tidfile="$dir/tids" '
BEGIN { while ((getline t < tidfile) > 0) ours[t] = 1 }
function flush() {
	if (tid != "" && (tid in ours)) {
		cause = "other"
		if (stack ~ /hrtimer/) cause = "timer"
		else if (stack ~ /udp|loopback|ep_poll_callback/) cause = "datagram"
		else if (stack ~ /smp_call_function/) cause = "queued from the other CPU (inter-processor interrupt)"
		else if (stack ~ /futex/) cause = "another thread of the process (futex)"
		n[tid " " cause]++
		total++
	}
	tid = ""; stack = ""
}
/sched:sched_wakeup:/ { flush(); if (match($0, /pid=[0-9]+/)) tid = substr($0, RSTART + 4, RLENGTH - 4); next }
/^$/ { flush(); next }
{ stack = stack " " $2 }
END {
	flush()
	printf "%.0f wake-ups a second of the process'"'"'s threads\n", total / secs
	for (k in n) {
		split(k, f, " ")
		printf "%7.0f /s  thread %s  %s\n", n[k] / secs, f[1], substr(k, length(f[1]) + 2) | "sort -rn"
	}
}'
