package room

import (
	"errors"
	"slices"
	"time"

	"github.com/podium-sfu/podium/internal/algo/lastn"
	"github.com/podium-sfu/podium/internal/algo/layers"
	"github.com/podium-sfu/podium/internal/signal"
)

// What a client names by participant id (pins, constraints) is kept only for
// participants in the room and forgotten when they leave, so a member's state
// is bounded by the room's membership, whatever ids its client sends.

// MaxPins is the most participants one member may pin: more than any Last N a
// screen shows, few enough that a pin list costs nothing.
const MaxPins = 16

// Errors of Pin.
var (
	ErrUnknownParticipant = errors.New("no such participant in the room")
	ErrTooManyPins        = errors.New("too many pins")
)

// Pin makes m always receive id's video (within its N). id must be in the room;
// m may pin at most MaxPins participants.
func (r *Room) Pin(m Member, id string) error {
	var err error
	r.doFor(m, func(s *state) {
		cur, ok := s.current(m)
		switch {
		case !ok || slices.Contains(cur.pinned, lastnID(id)):
		case !s.isSource(id):
			err = ErrUnknownParticipant
		case len(cur.pinned) >= MaxPins:
			err = ErrTooManyPins
		default:
			cur.pinned = append(cur.pinned, lastnID(id))
			s.reselect(time.Now())
		}
	})
	return err
}

// Unpin undoes Pin.
func (r *Room) Unpin(m Member, id string) {
	r.doFor(m, func(s *state) {
		if cur, ok := s.current(m); ok {
			cur.pinned = slices.DeleteFunc(cur.pinned, func(p lastn.ID) bool { return p == lastnID(id) })
			s.reselect(time.Now())
		}
	})
}

// SetConstraints records how m shows the videos it receives; entries for ids
// not in the room are ignored.
func (r *Room) SetConstraints(m Member, videos map[string]signal.VideoConstraint) {
	r.doFor(m, func(s *state) {
		cur, ok := s.current(m)
		if !ok {
			return
		}
		for id, c := range videos {
			if s.isSource(id) {
				cur.constraints[id] = layers.Want{Width: c.Width, Height: c.Height, Stage: c.Role == "stage"}
			}
		}
		s.maintainLayers(time.Now())
	})
}

// forget drops what the members named of id, which has left (not when a
// resumed session replaces it: it keeps its id).
func (s *state) forget(id string) {
	for _, o := range s.members {
		delete(o.constraints, id)
		o.pinned = slices.DeleteFunc(o.pinned, func(p lastn.ID) bool { return p == lastnID(id) })
	}
}
