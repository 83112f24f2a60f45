package session

import "sync"

// queue is an unbounded FIFO of closures for the session loop: producers (the room
// loop, pion callbacks) must never block on a session.
type queue struct {
	mu     sync.Mutex
	items  []func()
	notify chan struct{}
}

func newQueue() *queue { return &queue{notify: make(chan struct{}, 1)} }

func (q *queue) push(f func()) {
	q.mu.Lock()
	q.items = append(q.items, f)
	q.mu.Unlock()
	select {
	case q.notify <- struct{}{}:
	default:
	}
}

func (q *queue) drain() []func() {
	q.mu.Lock()
	defer q.mu.Unlock()
	items := q.items
	q.items = nil
	return items
}
