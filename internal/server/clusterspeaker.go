package server

import (
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/podium-sfu/podium/internal/cluster"
	"github.com/podium-sfu/podium/internal/room"
	"github.com/podium-sfu/podium/internal/signal"
)

// One speaker order per conference (docs/cluster.md, Speaker): of a room's
// bridges, the one serving it longest decides its speaker order and
// publishes it on podium.speaker.<room>; the others apply it on their room
// loops. Which bridge writes follows from the directory (its entries and the
// registry's health), so when the writer dies or leaves the room the next
// one takes over from the order it applied last.

const (
	speakerSubject = "podium.speaker." // + the room, its dots written "="
	// speakerTick is how often the writer looks for a new decision to
	// publish; speakerRefresh how often it publishes anyway (a bridge new to
	// the room, a member it did not list yet).
	speakerTick    = 50 * time.Millisecond
	speakerRefresh = time.Second
)

// orderMsg is a writer's speaker order for a room.
type orderMsg struct {
	Room string `json:"room"`
	Node string `json:"node"`
	room.SpeakerOrder
}

// speakerWriter is the bridge that writes a room's speaker order: of the
// room's bridges (healthy, from the directory) not draining, the one whose
// room opened first, then by node id; a draining writer only when no other
// bridge is left. self, serving the room since since, counts although its
// entry may not be in the directory yet.
func speakerWriter(self string, since time.Time, bridges []cluster.RoomEntry, draining map[string]bool) string {
	cands := append([]cluster.RoomEntry{{Node: self, Since: since}}, bridges...)
	best := -1
	for i, e := range cands {
		if i > 0 && e.Node == self {
			continue // our own entry: since is the room here now
		}
		if best < 0 {
			best = i
			continue
		}
		b := cands[best]
		if draining[e.Node] != draining[b.Node] {
			if draining[b.Node] {
				best = i
			}
			continue
		}
		if e.Since.Before(b.Since) || (e.Since.Equal(b.Since) && e.Node < b.Node) {
			best = i
		}
	}
	return cands[best].Node
}

// speakerOrders runs the decide/apply split for every room here.
type speakerOrders struct {
	node *cluster.Node
	hub  *room.Hub
	log  *slog.Logger
	in   chan orderMsg
	stop chan struct{}
	wg   sync.WaitGroup
	sub  *nats.Subscription
}

// roomOrder is this node's part in a room's order: whether it writes it,
// and the decision count and time of the last order it published.
type roomOrder struct {
	rm        *room.Room
	writing   bool
	decisions uint64
	at        time.Time
}

func startSpeakerOrders(node *cluster.Node, hub *room.Hub, log *slog.Logger) (*speakerOrders, error) {
	o := &speakerOrders{node: node, hub: hub, log: log, in: make(chan orderMsg, 64), stop: make(chan struct{})}
	sub, err := node.Conn().Subscribe(speakerSubject+"*", o.receive)
	if err != nil {
		return nil, err
	}
	o.sub = sub
	o.wg.Add(1)
	go func() { defer o.wg.Done(); o.run() }()
	return o, nil
}

func (o *speakerOrders) close() {
	_ = o.sub.Unsubscribe()
	close(o.stop)
	o.wg.Wait()
}

// receive queues another bridge's order (NATS's handler goroutine).
func (o *speakerOrders) receive(m *nats.Msg) {
	var msg orderMsg
	if json.Unmarshal(m.Data, &msg) != nil || !signal.ValidRoom(msg.Room) || msg.Node == o.node.ID() ||
		m.Subject != speakerSubject+roomSubjectToken(msg.Room) {
		return
	}
	select {
	case o.in <- msg:
	default: // the writer publishes again within speakerRefresh
	}
}

func roomSubjectToken(name string) string { return strings.ReplaceAll(name, ".", "=") }

func (o *speakerOrders) run() {
	t := time.NewTicker(speakerTick)
	defer t.Stop()
	rooms := map[string]*roomOrder{}
	for {
		select {
		case <-o.stop:
			return
		case msg := <-o.in:
			now := time.Now()
			if rm, ok := o.hub.Room(msg.Room); ok && o.writer(rm, o.node.Bridges(msg.Room, now), o.draining(now)) == msg.Node {
				rm.FollowOrder(msg.SpeakerOrder)
			}
		case <-t.C:
			now := time.Now()
			draining := o.draining(now)
			seen := map[string]bool{}
			for _, rm := range o.hub.Rooms() {
				seen[rm.Name()] = true
				p := rooms[rm.Name()]
				if p == nil || p.rm != rm {
					p = &roomOrder{rm: rm}
					rooms[rm.Name()] = p
				}
				o.write(now, p, draining)
			}
			for name := range rooms {
				if !seen[name] {
					delete(rooms, name)
				}
			}
		}
	}
}

// draining are the nodes that drain, by id.
func (o *speakerOrders) draining(now time.Time) map[string]bool {
	out := map[string]bool{}
	for _, n := range o.node.Nodes(now) {
		out[n.ID] = n.Load.Draining
	}
	return out
}

// writer is who writes rm's speaker order as this node sees the directory
// (bridges: the room's, from it).
func (o *speakerOrders) writer(rm *room.Room, bridges []cluster.RoomEntry, draining map[string]bool) string {
	return speakerWriter(o.node.ID(), rm.Created(), bridges, draining)
}

// write publishes the room's order when this node writes it and another
// bridge serves the room: at once after a decision, and every speakerRefresh.
func (o *speakerOrders) write(now time.Time, p *roomOrder, draining map[string]bool) {
	self := o.node.ID()
	bridges := o.node.Bridges(p.rm.Name(), now)
	if o.writer(p.rm, bridges, draining) != self {
		p.writing = false
		return
	}
	if !p.writing {
		p.writing = true
		p.rm.DecideOrder() // it may have followed the writer before us
		p.at = time.Time{}
	}
	others := slices.ContainsFunc(bridges, func(b cluster.RoomEntry) bool { return b.Node != self })
	d := p.rm.Decisions()
	if !others || (d == p.decisions && now.Sub(p.at) < speakerRefresh) {
		return
	}
	order, ok := p.rm.SpeakerOrder()
	if !ok {
		return
	}
	b, err := json.Marshal(orderMsg{Room: p.rm.Name(), Node: self, SpeakerOrder: order})
	if err != nil {
		return
	}
	if err := o.node.Conn().Publish(speakerSubject+roomSubjectToken(p.rm.Name()), b); err != nil {
		o.log.Debug("speaker order", "room", p.rm.Name(), "err", err)
		return
	}
	p.decisions, p.at = d, now
}
