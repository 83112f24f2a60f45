package layers

import "time"

// preemptMargin is e in the thesis' formula: a little after the receivers' own
// requests would have reached the sender.
const preemptMargin = 10 * time.Millisecond

// PreemptiveDelay is how long after a dominant speaker change the SFU should ask the
// new speaker for a keyframe of its high encoding (thesis ch. 5): d = max(receiver
// RTT) − sender RTT + 10 ms, at once if d ≤ 0. The keyframe then arrives about when
// the receivers switching their layout would have asked for it, and webrtc.org makes at
// most one keyframe per 300 ms, so arriving too early costs a whole keyframe.
func PreemptiveDelay(senderRTT time.Duration, receiverRTTs []time.Duration) time.Duration {
	var worst time.Duration
	for _, r := range receiverRTTs {
		worst = max(worst, r)
	}
	return max(worst-senderRTT+preemptMargin, 0)
}
