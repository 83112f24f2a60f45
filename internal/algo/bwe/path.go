package bwe

import "time"

// delivered is the share of what we sent over the last limitedWindow (by send
// time, among reported packets) that the path delivered at the rate we sent
// it: received bytes over sent bytes, times send span over receive span of
// the received ones. A burst that queued briefly or lost a few packets stays
// near 1; a path slower than our rate falls well below. It walks the history,
// so it runs only on overuse.
func (e *Estimator) delivered() float64 {
	var sentBytes, recvBytes int64
	var newestSend, firstSend, lastSend, firstArr, lastArr time.Duration
	haveNewest, haveRecv := false, false
	for ext, n := e.hist.newest(), 0; n < len(e.hist.slots); ext, n = ext-1, n+1 {
		s := e.hist.slot(ext)
		if s == nil {
			break
		}
		if !s.reported {
			continue
		}
		if !haveNewest {
			newestSend, haveNewest = s.at, true
		}
		if newestSend-s.at > limitedWindow {
			break
		}
		sentBytes += int64(s.size)
		if !s.received {
			continue
		}
		recvBytes += int64(s.size)
		if !haveRecv {
			firstSend, lastSend, firstArr, lastArr, haveRecv = s.at, s.at, s.arrival, s.arrival, true
			continue
		}
		firstSend, lastSend = min(firstSend, s.at), max(lastSend, s.at)
		firstArr, lastArr = min(firstArr, s.arrival), max(lastArr, s.arrival)
	}
	if sentBytes == 0 {
		return 1
	}
	ratio := float64(recvBytes) / float64(sentBytes)
	if sendSpan, recvSpan := lastSend-firstSend, lastArr-firstArr; sendSpan > 0 && recvSpan > sendSpan {
		ratio *= float64(sendSpan) / float64(recvSpan)
	}
	return ratio
}

// pathRate is the arrival rate of the newest received packets: at least
// pathPackets of them spanning pathWindow of arrival time, measured from the
// first arrival to the last (so it is exact at any packet rate). Behind a
// saturated bottleneck it is the bottleneck's rate.
func (e *Estimator) pathRate() (float64, bool) {
	var bytes int64
	var first, last time.Duration
	firstSize, n := int64(0), 0
	for ext, k := e.hist.newest(), 0; k < len(e.hist.slots); ext, k = ext-1, k+1 {
		s := e.hist.slot(ext)
		if s == nil {
			break
		}
		if !s.received {
			continue
		}
		if n == 0 {
			first, last = s.arrival, s.arrival
		}
		if n >= pathPackets && last-s.arrival > pathWindow {
			break
		}
		n++
		bytes += int64(s.size)
		if s.arrival <= first {
			first, firstSize = s.arrival, int64(s.size)
		}
		last = max(last, s.arrival)
	}
	if n < 2 || last <= first {
		return 0, false
	}
	return float64(bytes-firstSize) * 8 / (last - first).Seconds(), true
}

// A path whose bottleneck is far faster than what we send cannot hold a
// queue of ours: packets we sent back to back (within backToBack) leave its
// bottleneck size/capacity apart, so when most of the newest such pairs
// arrive closer together than a path of fastPathRatio × our rate would
// space them, a delay that stands or grows is not our queue. It is a busy
// receiver reading its socket late (measured: Firefox beside two Chromiums
// on 2 cores, median gap 0 ms at 1 Mb/s, where a 1 Mb/s bottleneck spaces
// 1200 B packets 9.6 ms apart), or another flow's queue, which the
// competition detector answers. Only the newest pairs count: when a fast
// path is capped, pairs from before the cap must not hold off the decrease
// (judged over a second, they slowed a 500 kb/s cap's 1 s descent to 1.6 s
// and the recovery after it from 3-5 s to 9 s, e2e).
const (
	backToBack    = 500 * time.Microsecond
	fastPathRatio = 4
	fastPathPairs = 16 // the newest pairs judged; fewer decide nothing
)

// fastPath reports whether the newest back-to-back pairs (over the last
// limitedWindow at most) say the path is more than fastPathRatio times
// faster than rate (bits/s).
func (e *Estimator) fastPath(rate float64) bool {
	if rate <= 0 {
		return false
	}
	fast, pairs := 0, 0
	var newestSend time.Duration
	haveNewest := false
	for ext, n := e.hist.newest(), 0; n < len(e.hist.slots)-1 && pairs < fastPathPairs; ext, n = ext-1, n+1 {
		s, p := e.hist.slot(ext), e.hist.slot(ext-1)
		if s == nil || p == nil {
			break
		}
		if !haveNewest && s.reported {
			newestSend, haveNewest = s.at, true
		}
		if haveNewest && newestSend-s.at > limitedWindow {
			break
		}
		if !s.received || !p.received || s.at < p.at || s.at-p.at >= backToBack {
			continue
		}
		pairs++
		spacing := time.Duration(float64(s.size) * 8 / (fastPathRatio * rate) * float64(time.Second))
		if s.arrival-p.arrival < spacing {
			fast++
		}
	}
	return pairs == fastPathPairs && 2*fast > pairs
}
