package room

import (
	"log/slog"
	"slices"
	"time"

	"github.com/podium-sfu/podium/internal/signal"
)

// announce queues m's new or changed entry for everyone. A big room lists
// (pushes to everyone) only its first listedCap participants and those who
// publish, are on stage or raise a hand; the others are in the count and the
// pages of list-participants, so that their joins cost the room nothing per
// receiver.
func (s *state) announce(now time.Time, m *member) {
	if !m.listed && (s.listed < listedCap || s.prominent(m)) {
		m.listed = true
		s.listed++
	}
	if m.listed {
		s.roster.set(now, m.info, s.joins)
	}
}

// announceJoin queues a joiner for everyone, and the room's new size.
func (s *state) announceJoin(now time.Time, m *member) {
	s.roster.count(now)
	s.announce(now, m)
}

// announceLeave queues a departure for everyone, and the room's new size.
func (s *state) announceLeave(now time.Time, m *member) {
	s.roster.count(now)
	if m.listed {
		m.listed = false
		s.listed--
		s.roster.left(now, m.info.ID, s.joins)
	}
}

func (s *state) prominent(m *member) bool {
	return len(m.ups) > 0 || m.share != nil || m.info.HandRaised || slices.Contains(s.onStage, m.info.ID)
}

// flushRoster sends everyone the changes due at now that its welcome did not
// have, each distinct message encoded once; force sends what is pending at once
// (before a room message that refers to it).
func (s *state) flushRoster(now time.Time, force bool) {
	if force {
		s.roster.last, s.roster.since = time.Time{}, time.Time{}
	}
	f, ok := s.roster.flush(now, len(s.members))
	if !ok {
		return
	}
	prepared := map[int]signal.Prepared{} // by the first entry sent
	for _, m := range s.members {
		i := f.from(m.order)
		if i == len(f.entries) && !f.counted {
			continue // its welcome had it all
		}
		p, ok := prepared[i]
		if !ok {
			var err error
			if p, err = signal.Prepare(signal.TypeParticipants, f.diff(i)); err != nil {
				slog.Error("encode participants", "err", err)
				return
			}
			prepared[i] = p
		}
		m.m.Send(signal.TypeParticipants, p)
	}
}

// Count is how many participants the room has.
func (r *Room) Count() int {
	n := 0
	r.do(func(s *state) { n = len(s.members) })
	return n
}

// Page lists up to signal.PageSize participants, in join order, after the
// join position after (0: from the first).
func (r *Room) Page(after int) signal.ParticipantPage {
	page := signal.ParticipantPage{Cursor: signal.PageCursor(after), Participants: []signal.Participant{}}
	r.do(func(s *state) {
		var from []*member
		for _, m := range s.members {
			if m.order > after {
				from = append(from, m)
			}
		}
		slices.SortFunc(from, func(a, b *member) int { return a.order - b.order })
		if len(from) > signal.PageSize {
			from = from[:signal.PageSize]
			page.Next = signal.PageCursor(from[len(from)-1].order)
		}
		for _, m := range from {
			page.Participants = append(page.Participants, m.info)
		}
		page.Count = len(s.members)
	})
	return page
}
