package relay

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
)

// Keys travel over the cluster's NATS (its routes are the cluster's TLS when
// configured, docs/cluster.md): every node announces its sending keys on
// podium.relay.key.<tag> when it starts and at every rotation, answers
// podium.relay.keyreq.<tag> with them, and on podium.relay.hello (a node that
// just started) announces them again.
const (
	keySubject   = "podium.relay.key."
	keyReqPrefix = "podium.relay.keyreq."
	helloSubject = "podium.relay.hello"
)

// announcement is one node's keys.
type announcement struct {
	Node   string `json:"node"`
	Sender uint32 `json:"sender"`
	Keys   []Key  `json:"keys"`
}

// Exchange distributes this node's relay keys and learns the others'.
type Exchange struct {
	nc    *nats.Conn
	node  string
	t     *Transport
	every time.Duration
	log   *slog.Logger

	rotate chan struct{}
	stop   chan struct{}
	wg     sync.WaitGroup
	subs   []*nats.Subscription

	rotations atomic.Uint64
}

// Rotations counts the key rotations done.
func (x *Exchange) Rotations() uint64 { return x.rotations.Load() }

// StartExchange announces t's keys as node's over nc, learns the others',
// fetches keys that datagrams name but the table lacks, and rotates the
// sending key every `every` (0: only on demand).
func StartExchange(nc *nats.Conn, node string, t *Transport, every time.Duration, log *slog.Logger) (*Exchange, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	x := &Exchange{nc: nc, node: node, t: t, every: every, log: log, rotate: make(chan struct{}, 1), stop: make(chan struct{})}
	sender := t.ring.Sender()
	subs := []struct {
		subj string
		f    nats.MsgHandler
	}{
		{keySubject + "*", func(m *nats.Msg) { x.learn(m.Data) }},
		{keyReqPrefix + strconv.FormatUint(uint64(sender), 16), func(m *nats.Msg) { _ = m.Respond(x.mine()) }},
		{helloSubject, func(m *nats.Msg) { x.announce() }},
	}
	for _, s := range subs {
		sub, err := nc.Subscribe(s.subj, s.f)
		if err != nil {
			x.unsubscribe()
			return nil, fmt.Errorf("relay: keys: %w", err)
		}
		x.subs = append(x.subs, sub)
	}
	// Our keys to everyone, and everyone's to us.
	x.announce()
	_ = nc.Publish(helloSubject, nil)
	_ = nc.Flush()
	x.wg.Add(2)
	go func() { defer x.wg.Done(); x.loop() }()
	go func() { defer x.wg.Done(); x.fetch() }()
	return x, nil
}

func (x *Exchange) mine() []byte {
	b, _ := json.Marshal(announcement{Node: x.node, Sender: x.t.ring.Sender(), Keys: x.t.ring.Keys(time.Now())})
	return b
}

func (x *Exchange) announce() {
	_ = x.nc.Publish(keySubject+strconv.FormatUint(uint64(x.t.ring.Sender()), 16), x.mine())
}

func (x *Exchange) learn(data []byte) {
	var a announcement
	if json.Unmarshal(data, &a) != nil || a.Sender == x.t.ring.Sender() || a.Node == "" {
		return
	}
	x.t.peers.Learn(time.Now(), a.Node, a.Sender, a.Keys)
}

// Rotate asks for a new sending key now (announced at once, used after the
// transport's lead time).
func (x *Exchange) Rotate() {
	select {
	case x.rotate <- struct{}{}:
	default:
	}
}

func (x *Exchange) loop() {
	var tick <-chan time.Time
	if x.every > 0 {
		t := time.NewTicker(x.every)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-x.stop:
			return
		case <-tick:
		case <-x.rotate:
		}
		x.t.ring.Rotate(time.Now())
		x.rotations.Add(1)
		x.announce()
		x.log.Debug("relay: key rotated", "keys", len(x.t.ring.Keys(time.Now())))
	}
}

// fetch asks a sender for its keys when a datagram named one we lack, at
// most once per second per sender.
func (x *Exchange) fetch() {
	asked := map[uint32]time.Time{}
	for {
		select {
		case <-x.stop:
			return
		case s := <-x.t.Missing():
			now := time.Now()
			if now.Sub(asked[s]) < time.Second {
				continue
			}
			asked[s] = now
			m, err := x.nc.Request(keyReqPrefix+strconv.FormatUint(uint64(s), 16), nil, time.Second)
			if err == nil {
				x.learn(m.Data)
			}
		}
	}
}

func (x *Exchange) unsubscribe() {
	for _, s := range x.subs {
		_ = s.Unsubscribe()
	}
	x.subs = nil
}

// Close stops announcing and fetching.
func (x *Exchange) Close() {
	x.unsubscribe()
	close(x.stop)
	x.wg.Wait()
}
