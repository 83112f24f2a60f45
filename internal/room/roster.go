package room

import (
	"slices"
	"time"

	"github.com/podium-sfu/podium/internal/signal"
)

// How often a room tells everyone about its participants: changes to listed
// participants go out at most every rosterInterval, in one participants
// message per receiver; a change of the count alone waits longer, the longer
// the bigger the room, so that a room spends about rosterCountBudget of them a
// second whatever its size (docs/scale.md, "Signaling cost").
const (
	rosterInterval    = 200 * time.Millisecond
	rosterCountMin    = time.Second
	rosterCountMax    = 10 * time.Second
	rosterCountBudget = 100 // count-only messages per second per room
	// listedCap is how many participants a room lists (pushes to everyone) on
	// top of those who publish, are on stage or raise a hand; the rest are
	// counted, and in the pages of list-participants.
	listedCap = 50
)

// rosterEntry is a listed participant's latest change: its entry, or nil when
// it left. seq is the room's join count when it was recorded: a receiver that
// joined at a later seq got it in its welcome.
type rosterEntry struct {
	id  string
	p   *signal.Participant
	seq int
}

// rosterBatch coalesces a room's participant changes into one message per
// receiver. It is pure: the room loop passes the time in.
type rosterBatch struct {
	pending []rosterEntry // one per id, in the order of their latest change
	counted bool          // the count changed
	since   time.Time     // the first change not yet sent
	last    time.Time     // the last message
}

// set records a listed participant's new or changed entry.
func (b *rosterBatch) set(now time.Time, p signal.Participant, seq int) {
	b.record(now, rosterEntry{id: p.ID, p: &p, seq: seq})
}

// left records that a listed participant left.
func (b *rosterBatch) left(now time.Time, id string, seq int) {
	b.record(now, rosterEntry{id: id, seq: seq})
}

// count records that the room's size changed.
func (b *rosterBatch) count(now time.Time) {
	b.start(now)
	b.counted = true
}

func (b *rosterBatch) record(now time.Time, e rosterEntry) {
	b.start(now)
	b.pending = slices.DeleteFunc(b.pending, func(x rosterEntry) bool { return x.id == e.id })
	b.pending = append(b.pending, e)
}

func (b *rosterBatch) start(now time.Time) {
	if !b.counted && len(b.pending) == 0 {
		b.since = now
	}
}

// due is when the pending changes go out (zero: nothing pending) in a room of
// size members.
func (b *rosterBatch) due(members int) time.Time {
	switch {
	case len(b.pending) > 0:
		return later(b.since.Add(rosterInterval), b.last.Add(rosterInterval))
	case b.counted:
		wait := min(max(time.Duration(members)*time.Second/rosterCountBudget, rosterCountMin), rosterCountMax)
		return later(b.since.Add(rosterInterval), b.last.Add(wait))
	}
	return time.Time{}
}

// rosterFlush is one round of participants messages.
type rosterFlush struct {
	entries []rosterEntry // in seq order
	count   int
	counted bool // the count changed
}

// flush takes the changes pending at now, if they are due; count is the
// room's size.
func (b *rosterBatch) flush(now time.Time, count int) (rosterFlush, bool) {
	due := b.due(count)
	if due.IsZero() || now.Before(due) {
		return rosterFlush{}, false
	}
	f := rosterFlush{entries: slices.Clone(b.pending), count: count, counted: b.counted}
	slices.SortStableFunc(f.entries, func(a, b rosterEntry) int { return a.seq - b.seq })
	b.pending, b.counted, b.last = b.pending[:0], false, now
	return f, true
}

// from is the index of the first entry a receiver that joined at seq joined
// needs: those recorded since its welcome.
func (f rosterFlush) from(joined int) int {
	i, _ := slices.BinarySearchFunc(f.entries, joined, func(e rosterEntry, seq int) int { return e.seq - seq })
	return i
}

// diff is the message for a receiver that needs the entries from i.
func (f rosterFlush) diff(i int) signal.ParticipantDiff {
	d := signal.ParticipantDiff{Participants: []signal.Participant{}, Left: []string{}, Count: f.count}
	for _, e := range f.entries[i:] {
		if e.p != nil {
			d.Participants = append(d.Participants, *e.p)
		} else {
			d.Left = append(d.Left, e.id)
		}
	}
	return d
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
