package room

import (
	"errors"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/podium-sfu/podium/internal/signal"
)

// Errors of Join.
var (
	// ErrClosed is returned after the hub was closed.
	ErrClosed = errors.New("server is shutting down")
	// ErrDraining is returned while the server drains: no new joins.
	ErrDraining = errors.New("server is shutting down and takes no new participants")
	// ErrTooManyRooms is returned when a new room would exceed Limits.MaxRooms.
	ErrTooManyRooms = errors.New("this server hosts as many rooms as it may")
	// ErrRoomFull is returned when the room has Limits.MaxParticipants.
	ErrRoomFull = errors.New("the room is full")
	// ErrE2EERequired refuses a join that does not announce e2ee into a room
	// that requires it.
	ErrE2EERequired = errors.New("this room admits only participants who encrypt end to end")
	// ErrTooManyRoomsFromAddress is returned when a new room would exceed
	// Limits.RoomsPerAddress for the joiner's address.
	ErrTooManyRoomsFromAddress = errors.New("your address has opened as many rooms as it may")
)

// Limits bound what a hub hosts; 0 means unlimited.
type Limits struct {
	MaxRooms        int
	MaxParticipants int // per room
	// RoomsPerAddress bounds the live rooms opened from one JoinOptions.Address,
	// so that one address cannot take every room of MaxRooms.
	RoomsPerAddress int
}

// JoinOptions are what the room needs to know about a participant beyond its
// public info.
type JoinOptions struct {
	Identity    string             // the token's subject ("" in dev mode)
	Permissions signal.Permissions // as granted by the token
	// Resume marks a reconnect with a valid resume secret: it may rejoin a live
	// room while the server drains.
	Resume bool
	// Address is the joiner's address key (limit.AddressKey), for RoomsPerAddress.
	Address string
	// AudioSlots: the client plays audio slots (audioslots.go).
	AudioSlots bool
}

// Hub is the set of live rooms. A room exists while at least one session holds it.
type Hub struct {
	defaults Settings
	limits   Limits
	mu       sync.Mutex
	rooms    map[string]*Room
	closed   bool
	draining *signal.Draining // set once draining starts
	busy     atomic.Bool      // overloaded: new joins get ErrBusy (overload.go)
	retired  Totals           // what rooms that ended counted
	opened   map[string]int   // live rooms by the address that opened them
	wg       sync.WaitGroup
	log      *slog.Logger // for the rooms; nil: slog.Default
}

// SetLogger sets the logger of rooms opened from now on.
func (h *Hub) SetLogger(l *slog.Logger) {
	h.mu.Lock()
	h.log = l
	h.mu.Unlock()
}

// NewHub makes an empty hub without limits whose rooms start with defaults.
func NewHub(defaults Settings) *Hub { return NewHubWith(defaults, Limits{}) }

// NewHubWith makes an empty hub with limits.
func NewHubWith(defaults Settings, limits Limits) *Hub {
	return &Hub{defaults: defaults, limits: limits, rooms: map[string]*Room{}, opened: map[string]int{}}
}

// Join enters m into the named room with default options (every permission).
func (h *Hub) Join(name string, m Member, info signal.Participant) (*Room, []signal.Participant, error) {
	return h.JoinWith(name, m, info, JoinOptions{Permissions: signal.Permissions{Publish: true, Subscribe: true, Admin: true}})
}

// JoinWith enters m into the named room; every successful join must be paired with
// Leave. It fails with ErrClosed, ErrDraining, ErrTooManyRooms or ErrRoomFull.
func (h *Hub) JoinWith(name string, m Member, info signal.Participant, opts JoinOptions) (*Room, []signal.Participant, error) {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, nil, ErrClosed
	}
	r, ok := h.rooms[name]
	if h.draining != nil && !(ok && opts.Resume) {
		h.mu.Unlock()
		return nil, nil, ErrDraining
	}
	if h.busy.Load() && !(ok && opts.Resume) {
		h.mu.Unlock()
		return nil, nil, ErrBusy
	}
	if !ok {
		if h.limits.MaxRooms > 0 && len(h.rooms) >= h.limits.MaxRooms {
			h.mu.Unlock()
			return nil, nil, ErrTooManyRooms
		}
		if h.limits.RoomsPerAddress > 0 && h.opened[opts.Address] >= h.limits.RoomsPerAddress {
			h.mu.Unlock()
			return nil, nil, ErrTooManyRoomsFromAddress
		}
		r = newRoom(name, h.defaults)
		if h.log != nil {
			r.log = h.log
		}
		r.opener = opts.Address
		h.opened[opts.Address]++
		h.rooms[name] = r
		h.wg.Add(1)
		go func() { defer h.wg.Done(); r.loop() }()
	}
	r.refs++
	h.mu.Unlock()
	others, err := r.join(m, info, opts, h.limits.MaxParticipants)
	if err != nil {
		h.release(r)
		return nil, nil, err
	}
	return r, others, nil
}

// Leave takes m out of r and ends the room when nobody holds it any more.
func (h *Hub) Leave(r *Room, m Member) {
	r.leave(m)
	h.release(r)
}

// release drops one reference to r. The last one ends the room: its loop stops
// and what it counted moves to the hub's totals, in one step under the lock so
// that a scrape sees the room's counters exactly once (Totals).
func (h *Hub) release(r *Room) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r.refs--
	if r.refs > 0 {
		return
	}
	delete(h.rooms, r.name)
	if h.opened[r.opener]--; h.opened[r.opener] <= 0 {
		delete(h.opened, r.opener)
	}
	close(r.quit)
	<-r.done // the loop finishes the command it is running; it never takes h.mu
	h.retired.Add(&r.state.retired)
}

// Rooms lists the live rooms, by name.
func (h *Hub) Rooms() []*Room {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.roomsLocked()
}

func (h *Hub) roomsLocked() []*Room {
	out := make([]*Room, 0, len(h.rooms))
	for _, r := range h.rooms {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// Room returns the live room of that name.
func (h *Hub) Room(name string) (*Room, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r, ok := h.rooms[name]
	return r, ok
}

// Sessions counts the sessions holding a room.
func (h *Hub) Sessions() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, r := range h.rooms {
		n += r.refs
	}
	return n
}

// Drain refuses new joins from now on (resumes into live rooms excepted) and
// tells every participant with a draining message. Later calls change nothing.
func (h *Hub) Drain(notice signal.Draining) {
	h.mu.Lock()
	if h.draining != nil {
		h.mu.Unlock()
		return
	}
	h.draining = &notice
	rooms := h.roomsLocked()
	h.mu.Unlock()
	for _, r := range rooms {
		r.do(func(s *state) { s.broadcast(nil, signal.TypeDraining, notice) })
	}
}

// Draining returns the drain notice once Drain was called.
func (h *Hub) Draining() (signal.Draining, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.draining == nil {
		return signal.Draining{}, false
	}
	return *h.draining, true
}

// Close refuses new joins and waits until every room has ended (its sessions left).
func (h *Hub) Close() {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	h.wg.Wait()
}

// Collect reads every live room's stats and the hub's forwarding totals: live
// tracks, plus tracks and rooms that ended, each counted exactly once, so the
// totals never go backwards from one call to the next.
func (h *Hub) Collect(now time.Time) ([]Stats, Totals) {
	h.mu.Lock()
	rooms := h.roomsLocked()
	totals := h.retired // rooms that end from here on are not in it, and still in rooms
	h.mu.Unlock()
	out := make([]Stats, 0, len(rooms))
	for _, r := range rooms {
		st, ok := r.Stats(now)
		if !ok {
			final := r.FinalTotals()
			totals.Add(&final)
			continue
		}
		totals.Add(&st.Totals)
		out = append(out, st)
	}
	return out, totals
}
