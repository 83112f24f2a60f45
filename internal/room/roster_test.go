package room

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/podium-sfu/podium/internal/signal"
)

func ids(ps []signal.Participant) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.ID
	}
	return out
}

// TestRosterBatchCoalesces: changes within rosterInterval go out together, one
// entry per participant with its latest state, and not before they are due.
func TestRosterBatchCoalesces(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var b rosterBatch
	if !b.due(10).IsZero() {
		t.Fatal("due with nothing pending")
	}
	b.count(t0)
	b.set(t0, signal.Participant{ID: "a", Name: "Ann"}, 1)
	b.set(t0.Add(50*time.Millisecond), signal.Participant{ID: "b"}, 2)
	b.set(t0.Add(60*time.Millisecond), signal.Participant{ID: "a", Name: "Ann", AudioMuted: true}, 2)
	b.left(t0.Add(70*time.Millisecond), "c", 2)
	b.set(t0.Add(80*time.Millisecond), signal.Participant{ID: "d"}, 3)
	b.left(t0.Add(90*time.Millisecond), "d", 3) // joined and left within the batch
	if got := b.due(10); !got.Equal(t0.Add(rosterInterval)) {
		t.Fatalf("due %v, want the first change + %v", got.Sub(t0), rosterInterval)
	}
	if _, ok := b.flush(t0.Add(rosterInterval-time.Millisecond), 3); ok {
		t.Fatal("flushed before it was due")
	}
	f, ok := b.flush(t0.Add(rosterInterval), 3)
	if !ok {
		t.Fatal("nothing flushed when due")
	}
	d := f.diff(0)
	if got := ids(d.Participants); !slices.Equal(got, []string{"b", "a"}) || !d.Participants[1].AudioMuted {
		t.Errorf("participants %+v, want b then a (muted): one entry each, the latest", d.Participants)
	}
	if !slices.Equal(d.Left, []string{"c", "d"}) || d.Count != 3 {
		t.Errorf("left %v count %d, want [c d] and 3", d.Left, d.Count)
	}
	if !b.due(3).IsZero() {
		t.Error("still due after the flush")
	}
}

// TestRosterBatchRateIsBounded: under a steady stream of changes a receiver
// gets at most one message per rosterInterval, and a change of the count alone
// waits longer in a bigger room.
func TestRosterBatchRateIsBounded(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var b rosterBatch
	flushes := 0
	for ms := 0; ms < 2000; ms += 5 { // a change every 5 ms for 2 s
		now := t0.Add(time.Duration(ms) * time.Millisecond)
		b.set(now, signal.Participant{ID: fmt.Sprint("p", ms)}, ms)
		if _, ok := b.flush(now, 10); ok {
			flushes++
		}
	}
	if flushes < 9 || flushes > 10 {
		t.Errorf("%d messages in 2 s of changes, want 2 s / %v", flushes, rosterInterval)
	}

	for _, c := range []struct {
		members int
		wait    time.Duration
	}{{10, rosterCountMin}, {500, 5 * time.Second}, {1000, rosterCountMax}, {100000, rosterCountMax}} {
		var b rosterBatch
		b.count(t0)
		b.flush(t0.Add(rosterInterval), c.members)
		b.count(t0.Add(300 * time.Millisecond))
		if got := b.due(c.members).Sub(t0.Add(rosterInterval)); got != c.wait {
			t.Errorf("%d members: a count change waits %v after the last message, want %v", c.members, got, c.wait)
		}
	}
}

// TestRosterFlushSkipsWhatTheWelcomeHad: a receiver that joined after a change
// was recorded got it in its welcome, and is sent only what came later.
func TestRosterFlushSkipsWhatTheWelcomeHad(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var b rosterBatch
	b.set(t0, signal.Participant{ID: "p3"}, 3) // p3 joined (the 3rd join)
	b.set(t0, signal.Participant{ID: "p1"}, 4) // p1 muted after p4 joined
	b.set(t0, signal.Participant{ID: "p5"}, 5) // p5 joined
	f, _ := b.flush(t0.Add(rosterInterval), 5)
	for _, c := range []struct {
		joined int
		want   []string
	}{{1, []string{"p3", "p1", "p5"}}, {3, []string{"p3", "p1", "p5"}}, {4, []string{"p1", "p5"}}, {5, []string{"p5"}}, {6, []string{}}} {
		if got := ids(f.diff(f.from(c.joined)).Participants); !slices.Equal(got, c.want) {
			t.Errorf("receiver of join %d is sent %v, want %v", c.joined, got, c.want)
		}
	}
}

// TestJoinDoesNotFanOutAtOnce: a join costs the others nothing when it
// happens; within rosterInterval each of them gets one participants message,
// however many joined meanwhile.
func TestJoinDoesNotFanOutAtOnce(t *testing.T) {
	f := newFixture(t, Settings{LastN: -1, VideoPausing: true})
	var early []*fakeMember
	for i := range 20 {
		early = append(early, f.join(fmt.Sprint("e", i), false))
	}
	before := make([]int, len(early))
	for i, m := range early {
		before[i] = len(m.msgs)
	}
	start := time.Now()
	for i := range 30 {
		id := fmt.Sprint("n", i)
		m := newFake(id)
		if _, _, err := f.hub.Join("r", m, signal.Participant{ID: id, Name: id}); err != nil {
			t.Fatal(err)
		}
		f.members[id] = m
	}
	// Nothing at once; on a box so busy that the joins took longer than
	// rosterInterval, one batch per interval at most.
	allowed := int(time.Since(start) / rosterInterval)
	for i, m := range early {
		m.mu.Lock()
		got := m.msgs[before[i]:]
		m.mu.Unlock()
		if len(got) > allowed {
			t.Fatalf("%s was sent %d messages as 30 joined, at once: %v", m.id, len(got), got)
		}
	}
	f.room.settle()
	for i, m := range early {
		if got := len(m.diffs()); got < 1+(len(early)-i) || got > 1+(len(early)-i)+allowed {
			t.Errorf("%s: %d participants messages, want one per batch", m.id, got)
		}
		if d := m.diffs()[0]; d.Count != 50 {
			t.Errorf("%s: count %d, want 50", m.id, d.Count)
		}
		for j := range 30 {
			if _, ok := m.entry(fmt.Sprint("n", j)); !ok {
				t.Errorf("%s never heard of n%d", m.id, j)
			}
		}
	}
}

// TestBigRoomCountsItsAudience: past listedCap, a participant who only
// watches is counted, not listed; one who publishes or raises a hand is.
func TestBigRoomCountsItsAudience(t *testing.T) {
	f := newFixture(t, Settings{LastN: -1, VideoPausing: true})
	watch := JoinOptions{Permissions: signal.Permissions{Subscribe: true}}
	var first *fakeMember
	for i := range listedCap + 5 {
		id := fmt.Sprintf("v%03d", i)
		m := newFake(id)
		if _, _, err := f.hub.JoinWith("r", m, signal.Participant{ID: id, Name: id}, watch); err != nil {
			t.Fatal(err)
		}
		f.members[id] = m
		if first == nil {
			first = m
			f.room, _ = f.hub.Room("r")
		}
	}
	f.room.settle()
	last := fmt.Sprintf("v%03d", listedCap+4)
	if _, ok := first.entry(last); ok {
		t.Errorf("%s, past the first %d, was listed", last, listedCap)
	}
	if d := first.diffs()[0]; d.Count != listedCap+5 {
		t.Errorf("count %d, want %d", d.Count, listedCap+5)
	}
	late := newFake("late")
	_, others, _ := f.hub.JoinWith("r", late, signal.Participant{ID: "late"}, watch)
	f.members["late"] = late
	if len(others) != listedCap {
		t.Errorf("the welcome lists %d, want the %d listed", len(others), listedCap)
	}
	f.room.SetHand(f.members[last], true)
	f.room.settle()
	if got, ok := first.entry(last); !ok {
		t.Errorf("%s raised a hand and is still not listed (%s)", last, got)
	}
	all, cursor := 0, 0
	for {
		page := f.room.Page(cursor)
		all += len(page.Participants)
		if page.Next == "" {
			break
		}
		cursor, _ = signal.ParseCursor(page.Next)
	}
	if all != listedCap+6 {
		t.Errorf("the pages list %d, want all %d", all, listedCap+6)
	}
}
