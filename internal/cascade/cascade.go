// Package cascade joins the bridges of one conference (issue 15, docs/cluster.md
// Relay): each bridge tells the others who is served there and what they
// publish (a roster per room over NATS), shows the others' participants to
// its local clients as members of the room whose tracks come over the relay,
// and asks the bridges they publish on for exactly the streams its receivers
// select (Last N between bridges), which those send over the relay.
//
// One goroutine (run) owns the state of remote participants; the origin
// side (what this node relays to others) has its own mutex, taken by NATS's
// subscription handler, the relay's reader (feedback) and run.
package cascade

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/podium-sfu/podium/internal/cluster"
	"github.com/podium-sfu/podium/internal/relay"
	"github.com/podium-sfu/podium/internal/room"
)

// Config is what the cascade needs of the server.
type Config struct {
	Node  *cluster.Node
	Hub   *room.Hub
	Relay *relay.Transport
	// Addr is this node's relay socket as the other bridges reach it.
	Addr netip.AddrPort
	// RelayRTT, when set, is the relay probes' round trip to a node, which
	// the one-RTT rule and the NACK retries use rather than the NATS
	// request's round trip.
	RelayRTT func(node string, now time.Time) (time.Duration, bool)
	Log      *slog.Logger
}

const (
	// rosterEvery is how often a bridge tells the others its participants
	// of each room (and at once when they change); a bridge whose roster is
	// rosterTTL old is taken for gone.
	rosterEvery = 500 * time.Millisecond
	rosterTTL   = 3 * time.Second
	// subscribeEvery refreshes a bridge's subscriptions (at once when they
	// change); the origin drops those not refreshed within subscribeTTL.
	subscribeEvery = time.Second
	subscribeTTL   = 5 * time.Second
	tick           = 50 * time.Millisecond
)

// NATS subjects; a room's dots are written "=" (subject tokens).
const (
	rosterSubject = "podium.cascade.roster."
	helloSubject  = "podium.cascade.hello."
	subscribeName = "relay-subscribe"
)

func roomToken(name string) string { return strings.ReplaceAll(name, ".", "=") }

// Cascade is the node's part in conferences spread over bridges.
type Cascade struct {
	cfg     Config
	addr    atomic.Pointer[netip.AddrPort] // our relay address as told other bridges
	nc      *nats.Conn
	log     *slog.Logger
	origin  *origin
	remote  *remotes
	rosters chan roster
	hellos  chan string
	stop    chan struct{}
	wg      sync.WaitGroup
	subs    []*nats.Subscription
}

// Start joins the cascade: rosters out and in, subscriptions, relayed media.
func Start(cfg Config) (*Cascade, error) {
	if cfg.Node == nil || cfg.Hub == nil || cfg.Relay == nil {
		return nil, errors.New("cascade: node, hub and relay are required")
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	c := &Cascade{cfg: cfg, nc: cfg.Node.Conn(), log: cfg.Log, rosters: make(chan roster, 64), hellos: make(chan string, 16), stop: make(chan struct{})}
	c.addr.Store(&cfg.Addr)
	c.origin = newOrigin(cfg)
	c.remote = newRemotes(cfg, &c.addr)
	cfg.Relay.SetHandler(c.receive)
	if err := cfg.Node.Handle(subscribeName, c.origin.subscribe); err != nil {
		return nil, err
	}
	for subj, f := range map[string]nats.MsgHandler{
		rosterSubject + "*": c.onRoster,
		helloSubject + "*":  c.onHello,
	} {
		sub, err := c.nc.Subscribe(subj, f)
		if err != nil {
			c.unsubscribe()
			return nil, fmt.Errorf("cascade: %w", err)
		}
		c.subs = append(c.subs, sub)
	}
	c.wg.Add(1)
	go func() { defer c.wg.Done(); c.run() }()
	return c, nil
}

// SetAddr changes the relay address other bridges are told to send to from
// the next roster and subscription on (tests: an emulated path in front of
// the socket).
func (c *Cascade) SetAddr(a netip.AddrPort) { c.addr.Store(&a) }

// Addr is the relay address other bridges are told to send to.
func (c *Cascade) Addr() netip.AddrPort { return *c.addr.Load() }

// receive dispatches an accepted relay datagram (on the relay's reader).
func (c *Cascade) receive(sender uint32, kind relay.Kind, stream uint32, body []byte) {
	switch kind {
	case relay.KindMedia:
		c.remote.media(sender, stream, body)
	case relay.KindFeedback:
		c.origin.feedback(time.Now(), sender, stream, body)
	case relay.KindReport:
		c.remote.report(sender, stream, body)
	}
}

func (c *Cascade) unsubscribe() {
	for _, s := range c.subs {
		_ = s.Unsubscribe()
	}
	c.subs = nil
}

// Close stops relaying: remote participants leave the local rooms, relayed
// tracks end.
func (c *Cascade) Close() {
	c.unsubscribe()
	close(c.stop)
	c.wg.Wait()
	c.cfg.Relay.SetHandler(nil)
	c.origin.close()
}

// run owns the remote side: rosters in, rosters out, subscriptions.
func (c *Cascade) run() {
	t := time.NewTicker(tick)
	defer t.Stop()
	var lastRoster time.Time
	known := map[string]bool{} // local rooms seen at the last tick
	for {
		select {
		case <-c.stop:
			c.remote.closeAll()
			return
		case r := <-c.rosters:
			c.remote.apply(time.Now(), r)
		case name := <-c.hellos:
			if rm, ok := c.cfg.Hub.Room(name); ok {
				c.publishRoster(time.Now(), rm)
			}
		case <-t.C:
			now := time.Now()
			rooms := c.cfg.Hub.Rooms()
			due := now.Sub(lastRoster) >= rosterEvery
			seen := map[string]bool{}
			for _, rm := range rooms {
				seen[rm.Name()] = true
				if !known[rm.Name()] {
					// New here: the other bridges' rosters now, not in 500 ms.
					_ = c.nc.Publish(helloSubject+roomToken(rm.Name()), nil)
				}
				if due || !known[rm.Name()] {
					c.publishRoster(now, rm)
				}
			}
			if due {
				lastRoster = now
			}
			known = seen
			for name := range c.origin.rooms() {
				if !seen[name] {
					c.origin.retain(name, nil)
				}
			}
			c.remote.maintain(now, seen)
			c.origin.expire(now)
		}
	}
}

func (c *Cascade) onRoster(m *nats.Msg) {
	r, err := decodeRoster(m.Data)
	if err != nil || r.Node == c.cfg.Node.ID() {
		return
	}
	select {
	case c.rosters <- r:
	default: // the next one comes within rosterEvery
	}
}

func (c *Cascade) onHello(m *nats.Msg) {
	name := strings.ReplaceAll(strings.TrimPrefix(m.Subject, helloSubject), "=", ".")
	select {
	case c.hellos <- name:
	default:
	}
}

// Stats are the cascade's counters, for metrics and tests.
type Stats struct {
	RemoteParticipants int    // participants of other bridges in local rooms
	RelayedOut         int    // streams this node relays to other bridges now
	RelayedIn          int    // streams relayed to this node now
	QueueDrops         uint64 // relayed packets dropped for a full track queue
	Reports            uint64 // sender reports relayed to this node
	// The relay hop's repair of what this node receives, by kind, and how
	// it answered the others' NACKs.
	AudioRepair, VideoRepair Repair
	Resends                  Resends
}

// Stats reads the counters.
func (c *Cascade) Stats() Stats {
	st := c.remote.stats()
	st.RelayedOut = c.origin.count()
	st.Resends = c.origin.resends.load()
	return st
}
