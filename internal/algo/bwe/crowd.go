package bwe

import "time"

// A crowded path: flows that do not back off (ten CUBIC downloads) keep the
// bottleneck's queue full, and a share of whatever arrives is dropped, ours
// with it. The estimator's competitive mode (compete.go) is not that signal:
// with ten flows' loss the path delivers under competeDelivered of what we
// send, and the mode came 17 s into a 20 s phase of ten flows (TCP-share run
// V, docs/adaptation.md). One CUBIC flow's overflows lose up to 5 % in a
// window, and random loss with no queue (the 5 % browser test) is repaired
// as it comes: neither is crowded.
const (
	CrowdedLoss  = 0.07                  // a loss window of at least this…
	CrowdedQueue = 50 * time.Millisecond // …behind a queue of at least this
	ClearLoss    = 0.01                  // a loss window under this…
	ClearQueue   = 20 * time.Millisecond // …and a queue under this: the flows stopped
)

// Crowded reports a crowded path from the last loss window (LossFraction)
// and the queueing delay (QueueDelay).
func Crowded(loss float64, queue time.Duration) bool {
	return loss >= CrowdedLoss && queue >= CrowdedQueue
}

// Clear reports a path with neither loss nor queue to speak of.
func Clear(loss float64, queue time.Duration) bool {
	return loss < ClearLoss && queue < ClearQueue
}
