package room

import (
	"time"

	"github.com/podium-sfu/podium/internal/algo/layers"
	"github.com/podium-sfu/podium/internal/forward"
)

// keyframeAt is a keyframe request scheduled for later.
type keyframeAt struct {
	at time.Time
	up *forward.UpTrack
}

// preemptKeyframe schedules a request for the new dominant speaker's highest
// encoding, which receivers putting it on stage are about to switch to. A source
// with one encoding needs none: no layer switch follows.
func (s *state) preemptKeyframe(now time.Time, speaker string) {
	pub, ok := s.members[speaker]
	if !ok {
		return
	}
	var top *forward.UpTrack
	encodings := 0
	for _, up := range pub.videoUps() {
		if up != nil {
			top = up
			encodings++
		}
	}
	if encodings < 2 {
		return
	}
	senderRTT, _ := pub.m.RTT()
	var receivers []time.Duration
	for id, m := range s.members {
		if id != speaker {
			_, rtt := m.m.RTT()
			receivers = append(receivers, rtt)
		}
	}
	s.keyframes = append(s.keyframes, keyframeAt{at: now.Add(layers.PreemptiveDelay(senderRTT, receivers)), up: top})
}

// sendDueKeyframes sends the scheduled requests whose time has come.
func (s *state) sendDueKeyframes(now time.Time) {
	kept := s.keyframes[:0]
	for _, k := range s.keyframes {
		if now.Before(k.at) {
			kept = append(kept, k)
			continue
		}
		k.up.RequestKeyframe(now)
	}
	s.keyframes = kept
}

// nextKeyframe is the earliest scheduled request (zero: none).
func (s *state) nextKeyframe() time.Time {
	var next time.Time
	for _, k := range s.keyframes {
		if next.IsZero() || k.at.Before(next) {
			next = k.at
		}
	}
	return next
}
