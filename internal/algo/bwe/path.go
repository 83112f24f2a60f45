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
