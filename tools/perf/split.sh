#!/usr/bin/env bash
# Splits a perf recording of the SFU or of the floor's forwarder into where the
# time goes, each sample counted once (docs/performance.md, "Beyond the
# floor"). Usage:
#   tools/perf/split.sh PERF_DATA [US_PER_PKT]
# Record with call stacks while a benchmark runs, e.g.
#   ./bin/podium bench forward --scenario S --warmup 10s --duration 25s --floor-duration 0 --quiet &
#   sleep 16; perf record -F 4000 -g -o sfu.perf -p "$(pgrep -f 'bench sfu')" -- sleep 12
#   ./bin/podium bench floor --scenario S --duration 25s &
#   sleep 6; perf record -F 4000 -g -o floor.perf -p "$(pgrep -f 'bench floorfwd')" -- sleep 12
# With US_PER_PKT (the run's CPU per forwarded packet) each line also gives its
# share of it in µs. A sample goes to the first category its stack matches, in
# the order below.
set -euo pipefail
data=$1
us=${2:-0}
perf script -i "$data" 2>/dev/null | awk -v us="$us" '
function classify(s) {
	if (s ~ /__x64_sys_sendmmsg/) return "send: kernel (sendmmsg)"
	if (s ~ /GCM\)\.Seal|sealAfter/) return "send: sealing (AES-GCM)"
	if (s ~ /UpTrack\)\.forward|floorForwarder\)\.forward/ && s !~ /__x64_sys_recvmmsg|GCM\)\.Open/) return "send: the rest of each destination'"'"'s write"
	if (s ~ /__x64_sys_recvmmsg/) return "receive: kernel (recvmmsg)"
	if (s ~ /takeRTCP/) return "policy: receivers'"'"' RTCP (feedback, reports)"
	if (s ~ /GCM\)\.Open|takeRTP|observingConn\)\.observe|Reader\)\.Next|floorForwarder\)\.(open|run)|ReadFromAddrPort/) return "receive: open, parse, account"
	if (s ~ /sysmon/) return "runtime: monitor thread"
	if (s ~ /findRunnable|park_m|schedule|epoll|futex|mcall/) return "scheduler: waiting and waking"
	if (s ~ /gridclock/) return "policy: clock (pacers, publishers'"'"' feedback)"
	if (s ~ /room\./) return "policy: room loop (layers, speaker)"
	if (s ~ /session\.|signal\./) return "policy: signaling"
	if (s ~ /gcBgMarkWorker|gcDrain|mallocgc/) return "runtime: GC, allocation"
	return "other"
}
/^$/ { if (stack != "") { n[classify(stack)]++; total++ } stack = ""; next }
/^[ \t]/ { stack = stack " " $2; next }
END {
	for (c in n) printf "%-52s %6d %5.1f%% %6.2f µs\n", c, n[c], 100 * n[c] / total, us * n[c] / total | "sort"
	close("sort")
	printf "%-52s %6d\n", "samples", total
}'
