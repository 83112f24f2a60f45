package room

import (
	"errors"
	"sync"

	"github.com/podium-sfu/podium/internal/signal"
)

// ErrClosed is returned by Join after the hub was closed.
var ErrClosed = errors.New("server is shutting down")

// Hub is the set of live rooms. A room exists while at least one session holds it.
type Hub struct {
	defaults Settings
	mu       sync.Mutex
	rooms    map[string]*Room
	closed   bool
	wg       sync.WaitGroup
}

// NewHub makes an empty hub whose rooms start with defaults.
func NewHub(defaults Settings) *Hub { return &Hub{defaults: defaults, rooms: map[string]*Room{}} }

// Join enters m into the named room; every successful Join must be paired with Leave.
func (h *Hub) Join(name string, m Member, info signal.Participant) (*Room, []signal.Participant, error) {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, nil, ErrClosed
	}
	r, ok := h.rooms[name]
	if !ok {
		r = newRoom(name, h.defaults)
		h.rooms[name] = r
		h.wg.Add(1)
		go func() { defer h.wg.Done(); r.loop() }()
	}
	r.refs++
	h.mu.Unlock()
	return r, r.join(m, info), nil
}

// Leave takes m out of r and ends the room when nobody holds it any more.
func (h *Hub) Leave(r *Room, m Member) {
	r.leave(m)
	h.mu.Lock()
	defer h.mu.Unlock()
	r.refs--
	if r.refs == 0 {
		delete(h.rooms, r.name)
		close(r.cmds)
	}
}

// Rooms lists the live rooms.
func (h *Hub) Rooms() []*Room {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]*Room, 0, len(h.rooms))
	for _, r := range h.rooms {
		out = append(out, r)
	}
	return out
}

// Close refuses new joins and waits until every room has ended (its sessions left).
func (h *Hub) Close() {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	h.wg.Wait()
}
