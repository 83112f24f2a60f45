package room

import (
	"time"

	"github.com/podium-sfu/podium/internal/algo/speaker"
)

// tick runs what is due: the end of a new sender's pause grace, layer maintenance,
// the speaker decision, a join's or leave's reselect and the batched participant
// changes.
func (s *state) tick() {
	now := time.Now()
	if !s.pauseCheck.IsZero() && !now.Before(s.pauseCheck) {
		s.pauseCheck = time.Time{}
		s.reselect(now) // a new sender's pause grace ended
	}
	if !now.Before(s.nextLayers) {
		s.maintainLayers(now)
		s.nextLayers = now.Add(layersInterval)
	}
	if next := s.detector.NextTimeout(); !next.IsZero() && !now.Before(next) {
		s.decideSpeaker()
	}
	s.sendDueKeyframes(time.Now())
	if !s.p2p.again.IsZero() && !now.Before(s.p2p.again) {
		s.reselect(now) // the P2P hold ended
	}
	s.reselectIfDue(now)
	s.flushRoster(now, false)
}

// decideSpeaker feeds the audio levels gathered since the last call to the dominant speaker
// detector and applies its decision. The levels are drained before reading the clock,
// so the detector never sees a level newer than its decision time.
func (s *state) decideSpeaker() {
	for _, m := range s.members {
		up := m.audio()
		if up == nil {
			continue
		}
		s.levels = up.Levels().Drain(s.levels[:0])
		for _, l := range s.levels {
			s.detector.Observe(l.At, speaker.ID(m.info.ID), l.Raw)
		}
	}
	now := time.Now()
	ev, ok := s.detector.HandleTimeout(now)
	if s.speakers.follow {
		// Another bridge decides (speakerorder.go): its choice stands, and
		// the detector keeps measuring against it, to take over from there.
		s.detector.Follow(speaker.ID(s.dominant))
		ok = false
	}
	if !ok {
		s.selectAudio(now) // the activity changed, if not the dominant speaker
		return
	}
	s.setDominant(now, string(ev.Dominant))
	s.speakers.decisions.Add(1)
	s.reselect(now)
}

// nextTick is when the loop must call tick; zero means not until something changes.
func (s *state) nextTick() time.Time {
	next := s.detector.NextTimeout()
	for _, t := range []time.Time{s.nextLayers, s.nextKeyframe(), s.p2p.again, s.roster.due(len(s.members)), s.reselectAt} {
		if len(s.members) > 0 && !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	return next
}
