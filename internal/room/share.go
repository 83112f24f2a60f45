package room

import (
	"slices"
	"time"

	"github.com/podium-sfu/podium/internal/algo/alloc"
	"github.com/podium-sfu/podium/internal/algo/lastn"
	"github.com/podium-sfu/podium/internal/forward"
	"github.com/podium-sfu/podium/internal/signal"
)

// A screen share is a source of its own (signal.ScreenSource): its tracks are
// kept in a member record of their own, the owner's share, which the owner's
// record points to and s.members does not hold. Everything that looks a source
// up by id (Last N, layers, the allocator, pins, constraints) goes through
// publisher, so the share is selected, laid out and allocated like a camera,
// with three differences: it goes on stage for everyone while it lasts (the
// room's on-stage set), the allocator serves it before cameras, and its
// sender is never paused, nor is its audio a speaker.

// publisher is the record publishing source: a participant (camera and
// microphone) or a participant's screen share.
func (s *state) publisher(source string) (*member, bool) {
	if m, ok := s.members[source]; ok {
		return m, true
	}
	if owner, ok := signal.ScreenOwner(source); ok {
		if m, ok := s.members[owner]; ok && m.share != nil {
			return m.share, true
		}
	}
	return nil, false
}

// publishShare adds up to owner's screen share, starting the share (on stage
// for everyone, announced in owner's participant info) with its first track.
func (s *state) publishShare(owner *member, up *forward.UpTrack, now time.Time) {
	sh := owner.share
	if sh == nil {
		id := up.Source()
		sh = &member{m: owner.m, info: signal.Participant{ID: id, Name: owner.info.Name}, videoSince: now,
			mutedAudio: owner.mutedAudio, mutedVideo: owner.mutedVideo}
		owner.share = sh
		owner.info.Screen = id
		if !slices.Contains(s.onStage, id) {
			s.onStage = append(s.onStage, id)
		}
		s.order.Add(lastnID(id))
		s.setOnStageOrder()
		s.announce(now, owner)
		s.flushRoster(now, true) // who shares, before the stage that shows it
		s.broadcast(nil, signal.TypeRoom, s.roomState())
	}
	sh.ups = append(sh.ups, up)
	up.SetMuted(sh.adminMuted(up.Kind()))
	for _, o := range s.members {
		if o != owner && o.perms.Subscribe {
			s.subscribe(o, up)
		}
	}
}

// unpublishShare removes up from owner's share and ends the share with its
// last track: off stage, forgotten by every receiver, announced.
func (s *state) unpublishShare(owner *member, up *forward.UpTrack) {
	sh := owner.share
	s.unpublish(sh, up)
	if len(sh.ups) > 0 {
		return
	}
	id := sh.info.ID
	owner.share = nil
	owner.info.Screen = ""
	s.onStage = slices.DeleteFunc(s.onStage, func(x string) bool { return x == id })
	s.order.Remove(lastnID(id))
	s.setOnStageOrder()
	s.forget(id)
	s.announce(time.Now(), owner)
	s.flushRoster(time.Now(), true)
	s.broadcast(nil, signal.TypeRoom, s.roomState())
}

// endShare unpublishes all of m's share (m leaves).
func (s *state) endShare(m *member) {
	for m.share != nil && len(m.share.ups) > 0 {
		s.unpublishShare(m, m.share.ups[0])
	}
}

// sharing reports whether up belongs to m's screen share.
func (m *member) sharing(up *forward.UpTrack) bool {
	return m.share != nil && slices.Contains(m.share.ups, up)
}

// publishedUps are all the tracks m publishes: camera and microphone, then its
// screen share.
func (m *member) publishedUps() []*forward.UpTrack {
	if m.share == nil {
		return m.ups
	}
	return append(slices.Clone(m.ups), m.share.ups...)
}

func (s *state) setOnStageOrder() {
	ids := make([]lastn.ID, len(s.onStage))
	for i, id := range s.onStage {
		ids[i] = lastnID(id)
	}
	s.order.SetOnStage(ids)
}

// orderFor is the video order as m's selection sees it: without its own
// screen share, which it never receives.
func orderFor(order []lastn.ID, m *member) []lastn.ID {
	if m.share == nil {
		return order
	}
	own := lastnID(m.share.info.ID)
	if !slices.Contains(order, own) {
		return order
	}
	return slices.DeleteFunc(slices.Clone(order), func(id lastn.ID) bool { return id == own })
}

// sharesFirst moves screen shares to the front of the allocator's sources,
// keeping the order otherwise, renumbers the priorities, and lets the shares
// preempt the cameras' layers: a share at a low layer or suspended is
// unreadable, while a camera degrades gracefully.
func sharesFirst(sources []alloc.Source) {
	slices.SortStableFunc(sources, func(a, b alloc.Source) int {
		_, sa := signal.ScreenOwner(a.ID)
		_, sb := signal.ScreenOwner(b.ID)
		switch {
		case sa && !sb:
			return -1
		case sb && !sa:
			return 1
		}
		return 0
	})
	for i := range sources {
		sources[i].Priority = i
		_, sources[i].Preempts = signal.ScreenOwner(sources[i].ID)
	}
}

// setShareMuted applies an administrator's mute to m's share as to its camera.
func (m *member) setShareMuted() {
	if m.share == nil {
		return
	}
	m.share.mutedAudio, m.share.mutedVideo = m.mutedAudio, m.mutedVideo
	for _, up := range m.share.ups {
		up.SetMuted(m.share.adminMuted(up.Kind()))
	}
}

// isSource reports whether id names a participant or a screen share in the room.
func (s *state) isSource(id string) bool {
	_, ok := s.publisher(id)
	return ok
}
