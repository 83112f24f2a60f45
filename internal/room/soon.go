package room

import "time"

// A join or a leave in a room of more than instantSelectMax members may wait
// selectDelay for Last N to be applied: a join storm then costs one reselect
// (every receiver's selection, O(room)) per delay, not one per join
// (docs/scale.md, "Signaling cost"). Smaller rooms reselect at once.
const (
	instantSelectMax = 50
	selectDelay      = 50 * time.Millisecond
)

// reselectSoon reselects at once in a small room, else within selectDelay.
func (s *state) reselectSoon(now time.Time) {
	if len(s.members) <= instantSelectMax {
		s.reselectAt = time.Time{}
		s.reselect(now)
		return
	}
	if s.reselectAt.IsZero() {
		s.reselectAt = now.Add(selectDelay)
	}
}

// reselectIfDue runs the reselect reselectSoon put off once it is due.
func (s *state) reselectIfDue(now time.Time) {
	if !s.reselectAt.IsZero() && !now.Before(s.reselectAt) {
		s.reselectAt = time.Time{}
		s.reselect(now)
	}
}
