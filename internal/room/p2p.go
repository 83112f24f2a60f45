package room

import (
	"errors"
	"slices"
	"time"

	"github.com/podium-sfu/podium/internal/limit"
	"github.com/podium-sfu/podium/internal/signal"
)

// Hybrid P2P (docs/p2p.md; spec section 7). While a room holds exactly two
// participants, and has for P2PHold, the room tells both to connect directly
// (p2p on, a new epoch, the lower id offers) and relays that connection's
// signaling between exactly those two. A participant whose client reports the
// direct connection up (p2p-state connected) is no longer forwarded the
// other's media, and the other is told to pause its video to the SFU when
// nobody else needs it; both SFU connections stay up. A third participant, a
// policy change or a failed direct connection ends the mode at once: the SFU
// forwards again before the clients are told (p2p off).

// P2PHold is how long the room's size must stay the same before a direct
// connection is tried: page reloads and quick rejoins cause churn.
const P2PHold = 5 * time.Second

// P2PRate and P2PBurst bound the P2P relay messages (offer, answer,
// candidates) one participant may send: P2PBurst at once, P2PRate a second.
const (
	P2PRate  = 10
	P2PBurst = 60
)

// Relay errors.
var (
	// ErrP2PNotPeer refuses a relay to anyone but the sender's current peer, or
	// for another epoch, or while the room is not in P2P mode.
	ErrP2PNotPeer = errors.New("not your peer-to-peer peer in this epoch")
	// ErrP2PRate refuses a relay beyond P2PRate / P2PBurst.
	ErrP2PRate = errors.New("too many peer-to-peer messages; wait a moment")
)

// p2pInput is what the P2P decision looks at.
type p2pInput struct {
	Participants int       // members, screen shares not counted
	Allowed      bool      // the policy (p2pAllowed)
	SizeChanged  time.Time // last change of Participants
	Failed       bool      // a direct connection failed since SizeChanged
	On           bool      // the room is in P2P mode now: the hold is for entering it
}

// decideP2P says whether the room should be in P2P mode at now. When it should
// not only because the size changed less than P2PHold ago, again is when to
// decide once more (zero otherwise). Leaving takes no hold. Pure: no clock, no
// state.
func decideP2P(in p2pInput, now time.Time) (on bool, again time.Time) {
	if in.Participants != 2 || !in.Allowed || in.Failed {
		return false, time.Time{}
	}
	if due := in.SizeChanged.Add(P2PHold); !in.On && now.Before(due) {
		return false, due
	}
	return true, time.Time{}
}

// P2PTotals count what hybrid P2P did.
type P2PTotals struct {
	ToP2P    uint64 // rooms switched to P2P mode
	ToSFU    uint64 // rooms switched from P2P mode back to the SFU
	Failures uint64 // direct connections reported failed
}

// p2pState is the room's P2P mode; owned by the room loop.
type p2pState struct {
	epoch       uint64
	on          bool
	pair        [2]string       // sorted: pair[0] initiates
	connected   map[string]bool // members reporting their direct connection up in this epoch
	size        int             // participants when last looked
	sizeChanged time.Time
	failed      bool
	again       time.Time // when to decide again (zero: no need)
	rates       map[string]limit.Bucket
}

// p2pAllowed is the policy: the room's setting, no screen share (P2P media is
// camera and microphone only) and nobody who only sends or only receives
// (webinar roles). End-to-end encryption is compatible: the direct connection
// is end to end already.
func (s *state) p2pAllowed() bool {
	if s.settings.NoP2P {
		return false
	}
	for _, m := range s.members {
		if m.share != nil || !m.perms.Publish || !m.perms.Subscribe {
			return false
		}
	}
	return true
}

// p2pUpdate decides the mode again after anything it depends on may have
// changed; reselect calls it first.
func (s *state) p2pUpdate(now time.Time) {
	p := &s.p2p
	if n := len(s.members); n != p.size {
		p.size, p.sizeChanged, p.failed = n, now, false
	}
	on, again := decideP2P(p2pInput{Participants: p.size, Allowed: s.p2pAllowed(), SizeChanged: p.sizeChanged, Failed: p.failed, On: p.on}, now)
	p.again = again
	pair := s.p2pPair()
	switch {
	case p.on && (!on || pair != p.pair):
		s.p2pOff(s.p2pReason())
		if on {
			s.p2pOn(pair)
		}
	case !p.on && on:
		s.p2pOn(pair)
	}
}

// p2pRestart ends P2P mode for a participant that came back in a new session
// (resume): its direct connection died with its page's old session; the hold
// starts again.
func (s *state) p2pRestart(now time.Time) {
	if s.p2p.on {
		s.p2pOff("rejoined")
	}
	s.p2p.size = -1
	s.p2p.sizeChanged = now
}

func (s *state) p2pPair() [2]string {
	var pair [2]string
	i := 0
	for id := range s.members {
		if i < 2 {
			pair[i] = id
		}
		i++
	}
	if pair[1] < pair[0] {
		pair[0], pair[1] = pair[1], pair[0]
	}
	return pair
}

func (s *state) p2pReason() string {
	switch {
	case s.p2p.failed:
		return "failed"
	case s.p2p.size != 2:
		return "size"
	default:
		return "policy"
	}
}

func (s *state) p2pOn(pair [2]string) {
	p := &s.p2p
	p.epoch++
	p.on, p.pair, p.connected = true, pair, map[string]bool{}
	s.retired.P2P.ToP2P++
	for i, id := range pair {
		if m, ok := s.members[id]; ok {
			m.m.Send(signal.TypeP2P, signal.P2PMode{On: true, Epoch: p.epoch, Peer: pair[1-i], Initiator: i == 0})
		}
	}
}

// p2pOff leaves P2P mode. The caller's reselect lifts the bypass before the
// clients read the message (they keep showing the direct media until the
// SFU's plays).
func (s *state) p2pOff(reason string) {
	p := &s.p2p
	p.on, p.connected = false, nil
	s.retired.P2P.ToSFU++
	for _, id := range p.pair {
		if m, ok := s.members[id]; ok {
			m.m.Send(signal.TypeP2P, signal.P2PMode{Epoch: p.epoch, Reason: reason})
		}
	}
	s.setBypass()
}

// p2pPeer is the member m receives directly: its peer while m's client
// reports the direct connection up.
func (s *state) p2pPeer(m *member) (string, bool) {
	p := &s.p2p
	if !p.on || !p.connected[m.info.ID] {
		return "", false
	}
	switch m.info.ID {
	case p.pair[0]:
		return p.pair[1], true
	case p.pair[1]:
		return p.pair[0], true
	}
	return "", false
}

// setBypass stops forwarding to each member what it receives directly, and
// resumes the rest.
func (s *state) setBypass() {
	for _, m := range s.members {
		peer, direct := s.p2pPeer(m)
		for up, d := range m.downs {
			d.SetBypassed(direct && up.Source() == peer)
		}
	}
}

// RelayP2P passes a direct connection's offer, answer or candidate from m to
// its peer, stamped with m's id. It fails with ErrP2PRate or ErrP2PNotPeer.
func (r *Room) RelayP2P(m Member, typ string, msg signal.P2PSignal) error {
	var err error
	r.doFor(m, func(s *state) {
		cur, ok := s.current(m)
		if !ok {
			err = ErrP2PNotPeer
			return
		}
		err = s.relayP2P(time.Now(), cur, typ, msg)
	})
	return err
}

func (s *state) relayP2P(now time.Time, from *member, typ string, msg signal.P2PSignal) error {
	p := &s.p2p
	if p.rates == nil {
		p.rates = map[string]limit.Bucket{}
	}
	b, ok := p.rates[from.info.ID]
	if !ok {
		b = limit.NewBucket(P2PRate, P2PBurst)
		p.rates[from.info.ID] = b
	}
	if !b.Allow(now) {
		return ErrP2PRate
	}
	id := from.info.ID
	if !p.on || msg.Epoch != p.epoch || !slices.Contains(p.pair[:], id) || msg.To == id || !slices.Contains(p.pair[:], msg.To) {
		return ErrP2PNotPeer
	}
	to, ok := s.members[msg.To]
	if !ok {
		return ErrP2PNotPeer
	}
	to.m.Send(typ, signal.P2PSignal{From: id, Epoch: msg.Epoch, SDP: msg.SDP, Candidate: msg.Candidate})
	return nil
}

// SetP2PState records what m's client reports of its direct connection;
// reports of another epoch are stale and ignored.
func (r *Room) SetP2PState(m Member, st signal.P2PState) {
	r.doFor(m, func(s *state) {
		cur, ok := s.current(m)
		p := &s.p2p
		if !ok || !p.on || st.Epoch != p.epoch || !slices.Contains(p.pair[:], cur.info.ID) {
			return
		}
		now := time.Now()
		switch st.State {
		case signal.P2PConnected:
			if p.connected[cur.info.ID] {
				return
			}
			p.connected[cur.info.ID] = true
		case signal.P2PFailed:
			s.retired.P2P.Failures++
			p.failed = true
		case signal.P2PClosed:
			p.failed = true // the client gave up: no retry until the size changes
		}
		s.reselect(now)
	})
}

// forgetP2P drops a departed participant's relay rate.
func (p *p2pState) forget(id string) { delete(p.rates, id) }

// p2pStats are a room's P2P figures for Stats.
func (s *state) p2pStats() (on bool, direct int) {
	for _, m := range s.members {
		if _, ok := s.p2pPeer(m); ok {
			direct++
		}
	}
	return s.p2p.on, direct
}
