package room

import (
	"slices"
	"time"

	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/algo/lastn"
	"github.com/podium-sfu/podium/internal/forward"
	"github.com/podium-sfu/podium/internal/signal"
)

// reselect applies Last N after anything it depends on changed: each receiver's
// video DownTracks are switched on or off (no renegotiation), senders nobody watches
// are paused, and every source that newly entered some receiver's selection gets
// exactly one keyframe request, from the SFU itself.
func (s *state) reselect(now time.Time) {
	s.p2pUpdate(now)
	s.setBypass()
	order := s.videoOrder()
	entered := map[string]bool{}
	selections := make([][]lastn.ID, 0, len(s.members))
	for _, m := range s.sorted() {
		n := s.settings.capN(effectiveN(s.settings.LastN, m.wantN))
		sel := lastn.Select(orderFor(order, m), lastn.ID(m.info.ID), m.pinned, n)
		if m.perms.Subscribe { // one who is sent no media watches nobody: it keeps no sender unpaused
			needs := sel
			if peer, direct := s.p2pPeer(m); direct { // it gets its peer's video directly
				needs = slices.DeleteFunc(slices.Clone(sel), func(id lastn.ID) bool { return id == lastn.ID(peer) })
			}
			selections = append(selections, needs)
		}
		for up, d := range m.downs {
			if up.Kind() != webrtc.RTPCodecTypeVideo {
				continue
			}
			on := slices.Contains(sel, lastn.ID(up.Source()))
			if on && !d.Selected() {
				entered[up.Source()] = true
			}
			d.SetSelected(on)
		}
		if !slices.Equal(sel, m.forwarded) || n != m.forwardedN || !m.toldForwarded {
			m.forwarded, m.forwardedN, m.toldForwarded = sel, n, true
			m.m.Send(signal.TypeForwarded, signal.Forwarded{IDs: idStrings(sel), LastN: n})
		}
	}
	needed := append(lastn.Needed(order, selections), s.remoteSources()...)
	for _, m := range s.members {
		if m.video() == nil {
			continue
		}
		pause := s.settings.VideoPausing && !slices.Contains(needed, lastn.ID(m.info.ID))
		if graceEnds := m.videoSince.Add(s.settings.PauseGrace); pause && now.Before(graceEnds) {
			pause = false // still probing its uplink: paused when the grace ends
			if s.pauseCheck.IsZero() || graceEnds.Before(s.pauseCheck) {
				s.pauseCheck = graceEnds
			}
		}
		if pause == m.paused {
			continue
		}
		m.paused = pause
		if pause {
			m.m.Send(signal.TypePauseVideo, struct{}{})
		} else {
			m.m.Send(signal.TypeResumeVideo, struct{}{})
			entered[m.info.ID] = true
		}
	}
	s.maintainLayers(now)
	s.selectAudio(now)
	// One request per newly needed source, to each encoding some receiver targets.
	for id := range entered {
		m, ok := s.publisher(id)
		if !ok {
			continue
		}
		ups := m.videoUps()
		asked := [len(ups)]bool{}
		for _, o := range s.members {
			if d, ok := o.videoDowns()[id]; ok && d.Selected() {
				if target, _ := d.Layers(); target >= 0 && target < len(ups) && ups[target] != nil && !asked[target] {
					asked[target] = true
					ups[target].RequestKeyframe(now)
				}
			}
		}
	}
}

// videoOrder is the speaker order L restricted to participants publishing video
// (and not muted by an administrator).
func (s *state) videoOrder() []lastn.ID {
	all := s.order.IDs()
	out := make([]lastn.ID, 0, len(all))
	for _, id := range all {
		if m, ok := s.publisher(string(id)); ok && m.video() != nil && !m.mutedVideo {
			out = append(out, id)
		}
	}
	return out
}

func idStrings(ids []lastn.ID) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = string(id)
	}
	return out
}

// video is the member's published video track, if any.
func (m *member) video() *forward.UpTrack {
	for _, up := range m.ups {
		if up.Kind() == webrtc.RTPCodecTypeVideo {
			return up
		}
	}
	return nil
}

// audio is the member's published audio track, if any.
func (m *member) audio() *forward.UpTrack {
	for _, up := range m.ups {
		if up.Kind() == webrtc.RTPCodecTypeAudio {
			return up
		}
	}
	return nil
}
