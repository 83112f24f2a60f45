// Package lastn implements Last N selection: which senders' video each
// receiver gets, and which senders nobody watches (so they can be paused).
//
// Everything here is a plain value or pure function: no clock, no goroutines,
// no locks. The room's control loop owns an Order and calls Select for each
// receiver when the order, a pin set or N changes.
package lastn

import "slices"

// ID identifies an endpoint (participant) in a conference.
type ID string

// Order is the conference-wide speaker order L: the most recent dominant
// speaker first, endpoints that never spoke in join order at the end. The
// on-stage set (presenters) is always kept at the top, itself in speaker order.
//
// Internally Order keeps the pure speaker recency and the stage set apart, so
// an id leaving the stage drops back to where its speaking history puts it.
//
// The zero value is an empty order. Order is not safe for concurrent use; its
// owner (the room loop) mutates it. The slices returned by IDs are never
// written again, so they may be handed to other goroutines.
type Order struct {
	recency []ID            // every member, most recent dominant speaker first
	stage   map[ID]struct{} // on-stage ids; may name ids not (yet) members
	view    []ID            // stage members then the rest; rebuilt, never mutated
}

// Add appends id at the end of the order (it has never been dominant).
// It reports whether the order changed; adding a member again does nothing.
func (o *Order) Add(id ID) bool {
	if slices.Contains(o.recency, id) {
		return false
	}
	o.recency = append(o.recency, id)
	return o.rebuild()
}

// Remove drops id from the order. Its on-stage status, if any, is kept, so
// the stage set stays exactly what SetOnStage last said.
func (o *Order) Remove(id ID) bool {
	i := slices.Index(o.recency, id)
	if i < 0 {
		return false
	}
	o.recency = slices.Delete(o.recency, i, i+1)
	return o.rebuild()
}

// Promote records that id became the dominant speaker: it moves to the front
// of the order, below the on-stage ids (or to the front of the stage if it is
// on stage itself). Unknown ids are ignored.
func (o *Order) Promote(id ID) bool {
	i := slices.Index(o.recency, id)
	if i <= 0 {
		return false
	}
	copy(o.recency[1:i+1], o.recency[:i])
	o.recency[0] = id
	return o.rebuild()
}

// Arrange puts the speaker recency in the order given, as another bridge's
// order has it: the members among ids first, in that order, then the others
// in their order here (members that bridge does not know of yet). Ids that
// are not members are skipped. It reports whether the order changed.
func (o *Order) Arrange(ids []ID) bool {
	out := make([]ID, 0, len(o.recency))
	placed := make(map[ID]bool, len(ids))
	for _, id := range ids {
		if !placed[id] && slices.Contains(o.recency, id) {
			placed[id] = true
			out = append(out, id)
		}
	}
	for _, id := range o.recency {
		if !placed[id] {
			out = append(out, id)
		}
	}
	o.recency = out
	return o.rebuild()
}

// Recency is the speaker order without the stage: most recent dominant
// speaker first. The slice is a copy.
func (o *Order) Recency() []ID { return slices.Clone(o.recency) }

// SetOnStage replaces the on-stage set. Ids that are not members take effect
// once added. Order among on-stage ids is speaker order, not the order given.
func (o *Order) SetOnStage(ids []ID) bool {
	o.stage = make(map[ID]struct{}, len(ids))
	for _, id := range ids {
		o.stage[id] = struct{}{}
	}
	return o.rebuild()
}

// OnStage reports whether id is in the on-stage set.
func (o *Order) OnStage(id ID) bool {
	_, ok := o.stage[id]
	return ok
}

// IDs returns L. The slice is shared and read-only: Order never modifies a
// slice it has returned, it builds a new one on the next change.
func (o *Order) IDs() []ID { return o.view }

// Len returns the number of members.
func (o *Order) Len() int { return len(o.recency) }

// rebuild recomputes the view as a stable partition of the recency list
// (stage first) and reports whether it differs from the previous view.
func (o *Order) rebuild() bool {
	view := make([]ID, 0, len(o.recency))
	for _, id := range o.recency {
		if o.OnStage(id) {
			view = append(view, id)
		}
	}
	for _, id := range o.recency {
		if !o.OnStage(id) {
			view = append(view, id)
		}
	}
	if slices.Equal(view, o.view) {
		return false
	}
	o.view = view
	return true
}
