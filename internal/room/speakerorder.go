package room

import (
	"sync/atomic"
	"time"

	"github.com/podium-sfu/podium/internal/algo/lastn"
	"github.com/podium-sfu/podium/internal/algo/speaker"
	"github.com/podium-sfu/podium/internal/signal"
)

// One speaker order for a conference spread over bridges (docs/cluster.md,
// Speaker): one bridge of the room decides it, the others apply what it
// decided. A room decides by itself (a single node always does) until
// FollowOrder is called, and again after DecideOrder.

// SpeakerOrder is a room's speaker order as its deciding bridge has it: the
// dominant speaker and the speaker recency, most recent dominant speaker first
// (participants that never spoke after, in that bridge's join order). The
// stage is not in it: the on-stage set is a room setting, alike everywhere.
type SpeakerOrder struct {
	Dominant string   `json:"dominant"`
	Order    []string `json:"order"`
}

// orderSync is the room's part in a conference-wide speaker order; owned by
// the room loop but for decisions, which is read from anywhere.
type orderSync struct {
	follow    bool          // another bridge decides: this room applies
	told      string        // the dominant speaker last told to everyone
	decisions atomic.Uint64 // speaker changes this room decided
}

// Decisions counts the changes of dominant speaker this room decided itself
// (not those it applied): the deciding bridge publishes its order when it
// grows. Safe from any goroutine.
func (r *Room) Decisions() uint64 { return r.state.speakers.decisions.Load() }

// Created is when the room opened here (set before its loop starts, so safe
// from any goroutine).
func (r *Room) Created() time.Time { return r.state.created }

// SpeakerOrder is the room's speaker order now; false when the room ended.
func (r *Room) SpeakerOrder() (SpeakerOrder, bool) {
	var o SpeakerOrder
	ok := r.do(func(s *state) {
		o.Dominant = s.dominant
		for _, id := range s.order.Recency() {
			o.Order = append(o.Order, string(id))
		}
	})
	return o, ok
}

// FollowOrder applies the speaker order another bridge decided. From then on
// the room decides nothing itself: its detector keeps listening, following
// o's dominant speaker, so that it can take over from the same state
// (DecideOrder). Ids not in the room here yet are skipped; members o does not
// list keep their places after those it lists.
func (r *Room) FollowOrder(o SpeakerOrder) {
	r.do(func(s *state) { s.followOrder(time.Now(), o) })
}

// DecideOrder makes the room decide its speaker order again, from the order
// it applied last (this bridge now writes it).
func (r *Room) DecideOrder() {
	r.do(func(s *state) {
		s.speakers.follow = false
		if s.dominant != s.speakers.told { // it left while the writer was gone
			s.setDominant(time.Now(), s.dominant)
		}
	})
}

func (s *state) followOrder(now time.Time, o SpeakerOrder) {
	s.speakers.follow = true
	ids := make([]lastn.ID, len(o.Order))
	for i, id := range o.Order {
		ids[i] = lastnID(id)
	}
	changed := s.order.Arrange(ids)
	if _, known := s.members[o.Dominant]; o.Dominant != s.speakers.told && (known || o.Dominant == "") {
		s.setDominant(now, o.Dominant)
		changed = true
	}
	s.detector.Follow(speaker.ID(s.dominant))
	if changed {
		s.reselect(now)
	}
}

// setDominant makes id the dominant speaker (first in the order, its video
// asked for a keyframe ahead of the switch) and tells everyone.
func (s *state) setDominant(now time.Time, id string) {
	s.dominant, s.speakers.told = id, id
	if id != "" {
		s.order.Promote(lastnID(id))
		s.preemptKeyframe(now, id)
	}
	s.broadcast(nil, signal.TypeSpeaker, signal.Speaker{ID: id})
}
