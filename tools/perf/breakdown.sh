#!/usr/bin/env bash
# Splits a CPU profile of the server (podium bench forward --cpuprofile FILE) into
# where the time goes, as in docs/performance.md. Usage:
#   tools/perf/breakdown.sh bin/podium FILE
# Each line is the share of samples whose stack matches (go tool pprof -focus), so
# lines overlap; the last is the flat time in our own forwarding packages.
set -euo pipefail
bin=$1
prof=$2
total=$(go tool pprof -top -nodecount=1 "$bin" "$prof" 2>/dev/null | sed -n 's/.*Total samples = \([0-9.]*m*s\).*/\1/p')
# Under a focus, the first row of -top -cum is a root: its cum% is the focused share.
pct() { go tool pprof -top -cum -focus="$1" -nodecount=1 "$bin" "$prof" 2>/dev/null | awk '/flat%/ {getline; print $5; exit}'; }
show() { v=$(pct "$2"); printf "%-70s %7s\n" "$1" "${v:-0%}"; }
echo "total samples $total"
show "send: sendto system calls" 'syscall\.sendto'
show "send: SRTP protect" 'srtp.*encryptRTP'
show "send: pion's whole write path (includes the two above)" 'interceptorToTrackLocalWriter\).WriteRTP'
show "receive: recvfrom system calls" 'syscall\.recvfrom'
show "receive: SRTP unprotect" 'SessionSRTP\).decrypt'
show "receive: pion interceptors on received media (NACK, RR, TWCC)" 'interceptor/pkg/(nack|report|twcc)'
show "RTCP sent (TWCC feedback, reports, NACKs)" 'WriteRTCP|SessionSRTCP\).write'
show "Go scheduler and netpoll (goroutine hand-offs)" 'runtime\.(schedule|findRunnable|netpoll|futex|notewakeup|wakep)'
show "GC" 'runtime\.gcBgMarkWorker|runtime\.gcDrain|runtime\.mallocgc'
ours=$(go tool pprof -top -nodecount=100000 "$bin" "$prof" 2>/dev/null |
  awk '/podium\/internal\/(forward|rewrite|packetcache|media|latency)\./ { gsub("%", "", $2); s += $2 } END { printf "%.2f%%", s }')
printf "%-70s %7s\n" "our forwarding code itself (flat: forward, rewrite, packetcache, media)" "$ours"
