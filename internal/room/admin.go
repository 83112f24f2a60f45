package room

import (
	"time"

	"github.com/podium-sfu/podium/internal/signal"
)

// Administrator actions (the admin API). Each reports whether the participant
// was found.

// Remove ends a participant's session with a bye of that code and reason.
func (r *Room) Remove(id, code, reason string) bool {
	found := false
	r.do(func(s *state) {
		if m, ok := s.members[id]; ok {
			found = true
			m.m.Remove(code, reason)
		}
	})
	return found
}

// CloseRoom ends every participant's session with a bye; the room ends when the
// last one has left. It returns how many were told: those served here
// (another bridge's are closed there).
func (r *Room) CloseRoom(reason string) int {
	n := 0
	r.do(func(s *state) {
		for _, m := range s.members {
			if isRemote(m.m) {
				continue
			}
			m.m.Remove(signal.ByeRoomClosed, reason)
			n++
		}
	})
	return n
}

// AdminMute sets what an administrator mutes of a participant: muted media is
// dropped when it arrives, whatever the participant's client does, until an
// administrator lifts the mute. The participant is told with a muted message;
// everyone sees it muted. Lifting a mute leaves the participant's own state as
// its client last said.
func (r *Room) AdminMute(id string, audio, video bool) bool {
	found := false
	r.do(func(s *state) {
		m, ok := s.members[id]
		if !ok {
			return
		}
		found = true
		m.mutedAudio, m.mutedVideo = audio, video
		for _, up := range m.ups {
			up.SetMuted(m.adminMuted(up.Kind()))
		}
		m.setShareMuted()
		m.info.AudioMuted, m.info.VideoMuted = m.self.Audio || audio, m.self.Video || video
		m.m.Send(signal.TypeMuted, signal.Muted{Audio: audio, Video: video})
		s.announce(time.Now(), m)
		// Muted video leaves every selection; unmuted video comes back at a keyframe.
		s.reselect(time.Now())
	})
	return found
}
