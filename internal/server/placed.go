package server

import (
	"sync"
	"time"
)

// placedFor is how long a redirect counts as the conference having that
// bridge. The bridge publishes its room entry 100 ms after the join and the
// directory carries it to every node over JetStream; on a loaded box that
// took more than the half second four quick joins through one entry node
// need, and without this memory each of them saw no conference, ran the
// initial selection again and could split the call over two bridges of one
// region.
const placedFor = 10 * time.Second

// maxPlaced bounds the memory: room names come from clients.
const maxPlaced = 4096

// placements remembers where this node recently sent joins, by room, until
// the directory has caught up. Safe for concurrent use.
type placements struct {
	mu    sync.Mutex
	rooms map[string]placed
}

type placed struct {
	node string
	at   time.Time
}

// add records that a join for room was sent to node at now.
func (p *placements) add(room, node string, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.rooms == nil {
		p.rooms = map[string]placed{}
	}
	if len(p.rooms) >= maxPlaced {
		for r, e := range p.rooms {
			if now.Sub(e.at) > placedFor {
				delete(p.rooms, r)
			}
		}
		if len(p.rooms) >= maxPlaced {
			return
		}
	}
	p.rooms[room] = placed{node: node, at: now}
}

// recent is the bridge a join for room was sent to within placedFor of now,
// if any.
func (p *placements) recent(room string, now time.Time) (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.rooms[room]
	if !ok {
		return "", false
	}
	if now.Sub(e.at) > placedFor {
		delete(p.rooms, room)
		return "", false
	}
	return e.node, true
}
