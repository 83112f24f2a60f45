package peer

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/gridclock"
	"github.com/podium-sfu/podium/internal/wire"
)

// ICE consent on the data plane.
//
// Once a connection's pair is a UDP pair on one of our sockets (its entry in
// the ingress table), the socket's reader answers the peer's binding requests
// on that pair and sends our own consent checks (RFC 7675) itself, without
// allocating, instead of pion's agent: pion's keepalive pings and its answers
// were about two thirds of the server's heap allocations in meeting-8. Our
// checks' answers give the connection's round-trip time (wire.Route.RTT).
//
// Pion still judges liveness (disconnected after 8 s, failed 25 s later,
// which ends the session): each authentic request or answer from the peer
// reaches it, at most once a second, as a bare binding indication from the
// peer's address, which pion counts as traffic from that candidate (RFC 8445
// section 11 keepalives) and decodes at a fraction of a check's cost.
//
// Our checks go out every consentInterval from one goroutine for all
// connections (consentLoop), on pion's selected pair whatever the peer
// sends on: a controlling browser may move its media to a pair pion did not
// select (pion ignores a nomination of a lower-priority pair), and answers
// our checks on the selected one all the same, as it answered pion's pings.
// A peer that answers nothing loses consent (pion's liveness lapses).
//
// The peer's own binding indications are dropped: unauthenticated, they would
// let a forger of its address keep a dead connection up. Anything else the
// reader cannot vouch for (another pair, other credentials after an ICE
// restart, a role conflict, an error answer, a check before the credentials
// are known) goes to pion as it came.

// consentInterval is how often we check the peer's consent, as pion's
// keepalive did, so the session samples a fresh round-trip time each time
// (RFC 7675 suggests 5 s on average, randomised; ours start when each pair
// is selected, so connections do not check in step).
const consentInterval = 2 * time.Second

// pionFeedInterval: pion hears that the peer is alive at most this often.
const pionFeedInterval = time.Second

// consentPriority is the PRIORITY of our checks: a peer-reflexive candidate's
// (type preference 110, RFC 8445 section 5.1.2.2), local preference 65535,
// component 1. Only a peer that learns a new candidate from our check reads it.
const consentPriority = 110<<24 | 65535<<8 | 255

// iceCreds are a connection's ICE credentials as the data plane uses them.
type iceCreds struct {
	theirChecks []byte        // USERNAME of the peer's checks: "ourUfrag:theirUfrag"
	ourChecks   string        // USERNAME of ours: "theirUfrag:ourUfrag"
	ours        *wire.STUNKey // our password: the peer's checks and our answers
	theirs      *wire.STUNKey // the peer's: our checks and its answers
	controlling bool          // our ICE role
	tieBreaker  uint64
}

func newICECreds(local, remote webrtc.ICEParameters, controlling bool) *iceCreds {
	var tb [8]byte
	_, _ = rand.Read(tb[:])
	return &iceCreds{
		theirChecks: []byte(local.UsernameFragment + ":" + remote.UsernameFragment),
		ourChecks:   remote.UsernameFragment + ":" + local.UsernameFragment,
		ours:        wire.NewSTUNKey(local.Password),
		theirs:      wire.NewSTUNKey(remote.Password),
		controlling: controlling,
		tieBreaker:  binary.BigEndian.Uint64(tb[:]),
	}
}

// consent is one connection's ICE consent state, used by the reader of the
// socket its pair is on and by the consent loop (the lock is held for a
// few microseconds by either).
type consent struct {
	creds atomic.Pointer[iceCreds]  // nil until known: the peer's checks go to pion
	dest  atomic.Pointer[wire.Dest] // the selected pair
	route *wire.Route               // where the round-trip time goes (nil: nowhere)
	// nextCheck is when our next check is due (Unix ns; 0: at once).
	nextCheck atomic.Int64

	counts *consentCounts

	mu       sync.Mutex
	txID     [12]byte // our check in flight: a random prefix, then a count
	sentAt   time.Time
	inFlight bool
	fedPion  time.Time
	checks   uint64
}

// consentCounts count, over connections, what the readers and the consent
// loop did.
type consentCounts struct {
	answered  atomic.Uint64 // the peers' checks answered
	sent      atomic.Uint64 // our checks sent
	confirmed atomic.Uint64 // our checks the peers answered
}

func newConsent(route *wire.Route, counts *consentCounts) *consent {
	c := &consent{route: route, counts: counts}
	_, _ = rand.Read(c.txID[:4])
	return c
}

// learn fetches the connection's ICE credentials and role once its DTLS is
// up (so ICE is done and the transport's lock is free) and starts taking the
// peer's checks.
func (c *consent) learn(t *webrtc.ICETransport) {
	local, err := t.GetLocalParameters()
	if err != nil {
		slog.Info("ICE consent stays with pion for this connection", "err", err)
		return
	}
	remote, err := t.GetRemoteParameters()
	if err != nil {
		slog.Info("ICE consent stays with pion for this connection", "err", err)
		return
	}
	c.creds.Store(newICECreds(local, remote, t.Role() == webrtc.ICERoleControlling))
}

// moveTo follows the selected pair: a check in flight on the old one is forgotten.
func (c *consent) moveTo(d *wire.Dest) {
	c.mu.Lock()
	c.inFlight = false
	c.mu.Unlock()
	c.dest.Store(d)
	c.nextCheck.Store(0)
}

// consentTick is how often the consent loop looks for due checks.
const consentTick = 500 * time.Millisecond

// consentLoop sends the due consent checks of every connection in the
// ingress table until done is closed. It looks on consentTick's grid
// (gridclock.Every), whose points the shared clock's rounds fall on too.
func (in *ingress) consentLoop(done <-chan struct{}) {
	out := wire.NewBatch(64)
	gridclock.Every(done, consentTick, func() {
		now := time.Now()
		for _, c := range *in.byAddr.Load() {
			if c.consent != nil {
				c.consent.check(now, out)
			}
		}
		out.Flush()
	})
}

// due reports whether our next check is due at now.
func (c *consent) due(now time.Time) bool { return now.UnixNano() >= c.nextCheck.Load() }

// check queues our consent check to the peer in out if one is due at now.
// The consent loop is its only caller.
func (c *consent) check(now time.Time, out *wire.Batch) {
	creds, d := c.creds.Load(), c.dest.Load()
	if creds == nil || d == nil || !c.due(now) {
		return
	}
	if out.Free() == 0 {
		out.Flush() // before the lock: no lock is held across a system call
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nextCheck.Store(now.Add(consentInterval).UnixNano())
	c.checks++
	binary.BigEndian.PutUint64(c.txID[4:], c.checks)
	b := wire.AppendBindingRequest(out.Slot(), c.txID[:], creds.ourChecks, consentPriority, creds.controlling, creds.tieBreaker, creds.theirs)
	out.Commit(len(b), d)
	c.sentAt, c.inFlight = now, true
	c.counts.sent.Add(1)
}

// verdict is what the reader does with a datagram (ingress.take).
type verdict uint8

const (
	passToPion      verdict = iota // as it came: not the data plane's
	takenHere                      // handled: pion does not see it
	indicatedToPion                // handled, and rewritten for pion as a binding indication
)

// take handles STUN datagram b from peer, read on sock.
func (c *consent) take(b []byte, sock *wire.Socket, peer netip.AddrPort, now time.Time, out *wire.Batch) verdict {
	creds, d := c.creds.Load(), c.dest.Load()
	if creds == nil || d == nil || d.Sock != sock {
		return passToPion
	}
	m, err := wire.ParseSTUN(b)
	if err != nil {
		return passToPion
	}
	if out.Free() == 0 {
		out.Flush() // room for an answer, before the lock
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch m.Type {
	case wire.STUNBindingRequest:
		roleOK := m.Controlled && creds.controlling || m.Controlling && !creds.controlling
		if !roleOK || !bytes.Equal(m.Username, creds.theirChecks) || !m.Authentic(b, creds.ours) {
			return passToPion
		}
		a := wire.AppendBindingSuccess(out.Slot(), m.TxID, peer, creds.ours)
		out.Commit(len(a), d)
		c.counts.answered.Add(1)
	case wire.STUNBindingSuccess:
		if !c.inFlight || !bytes.Equal(m.TxID, c.txID[:]) || !m.Authentic(b, creds.theirs) {
			return passToPion
		}
		c.inFlight = false
		c.counts.confirmed.Add(1)
		if c.route != nil {
			c.route.SetRTT(now.Sub(c.sentAt))
		}
	case wire.STUNBindingIndication:
		// Unauthenticated, so anyone who can forge the peer's address could
		// keep pion's liveness up with it; on this pair pion hears only of
		// authentic checks and answers.
		return takenHere
	default:
		return passToPion
	}
	if now.Sub(c.fedPion) < pionFeedInterval {
		return takenHere
	}
	c.fedPion = now
	wire.AppendBindingIndication(b[:0], m.TxID) // its transaction id is read before it is overwritten
	return indicatedToPion
}
