// Package session runs one participant: its signaling WebSocket, its two peer
// connections, and its membership in a room. One goroutine (the loop) owns the
// session's state; readers, writers and pion callbacks hand work to it.
package session

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/algo/bwe"
	"github.com/podium-sfu/podium/internal/auth"
	"github.com/podium-sfu/podium/internal/forward"
	"github.com/podium-sfu/podium/internal/limit"
	"github.com/podium-sfu/podium/internal/peer"
	"github.com/podium-sfu/podium/internal/room"
	"github.com/podium-sfu/podium/internal/signal"
	"github.com/podium-sfu/podium/internal/turn"
	"github.com/podium-sfu/podium/internal/wire"
)

// Deps are the server-wide things a session uses.
type Deps struct {
	Engine *peer.Engine
	Hub    *room.Hub
	// ResumeKey signs resume secrets.
	ResumeKey []byte
	Log       *slog.Logger
	// JoinTimeout bounds the wait for the first message.
	JoinTimeout time.Duration
	// NegotiationTimeout bounds the wait for an answer to a subscribe offer.
	NegotiationTimeout time.Duration
	// MediaTimeout removes a joined session without a live peer connection that
	// sent no message for this long (0: never).
	MediaTimeout time.Duration
	// Meter, when set, counts every published track's packets (benchmarks).
	Meter *forward.Meter

	// Access control (README "Access control"). Auth verifies tokens; nil when no
	// keys are configured. Dev lets a join without a token have every permission.
	Auth *auth.Verifier
	Dev  bool
	// Now is the clock for token expiry (nil: time.Now).
	Now func() time.Time
	// Limits; 0 means unlimited (MaxMessageBytes 0: signal.MaxFrameBytes).
	Limits          room.Limits // reported in errors; the hub enforces them
	MaxMessageBytes int
	SignalingRate   int // messages per second per connection
	SignalingBurst  int
	MaxTracks       int           // tracks one participant may publish
	Joins           *limit.PerKey // joins per client address
	// Counters, when set, count connections, joins, messages and errors.
	Counters *Counters
	// Place, when set (a cluster: docs/cluster.md), chooses the bridge for a
	// join to room from a participant in region; bridge is the node a redirect
	// named (the ?bridge= of the WebSocket URL). A non-nil redirect sends the
	// client there instead of joining here. lost is the bridge a failing-over
	// client lost (?lost=): it is not chosen. resume: the join resumes a
	// participant (a busy node still takes those back).
	Place func(room, region, bridge, lost string, resume bool) *signal.Redirect
	// Fallbacks, when set (a cluster), gives the welcome this bridge's node id
	// and the other nodes' signaling URLs for a participant of region.
	Fallbacks func(region string) (node string, urls []string)
	// Inherit, when set (a cluster), gives the settings a room that a join
	// opens here takes from the cluster's directory (nil: none).
	Inherit func(room string) *signal.RoomSettings
	// Settings, when set (a cluster), changes a room's settings on every
	// bridge serving it (a moderator's room-settings).
	Settings func(room string, c signal.RoomSettings) error
	// Chat, when set (a cluster), carries a chat message posted here to the
	// room's other bridges.
	Chat func(room string, m signal.ChatMessage)
	// ClientRTT, when set (a cluster), takes the participant's RTT to this
	// node as sampled, with its region ("": the node's), for bridge selection.
	ClientRTT func(region, participant string, rtt time.Duration)
	// Estimates is the histogram of per-receiver bandwidth estimates in bits/s
	// (podium_receiver_estimate_bps): bandwidth estimation observes each new one.
	Estimates interface{ Observe(float64) }
	// TURN mints each participant's TURN credentials at join (nil: none).
	TURN *turn.Minter
}

// outQueueLen bounds the frames waiting for a slow client; overflowing closes it.
const outQueueLen = 256

// Session is one participant connection.
type Session struct {
	deps   Deps
	conn   *websocket.Conn
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelCauseFunc
	out    chan []byte
	work   *queue
	wg     sync.WaitGroup // every goroutine the session starts
	tracks sync.WaitGroup // the subset that forwards published tracks and calls the room
	stats  sync.WaitGroup // the RTT sampler: pion's GetStats races with Close, so it ends first

	mu       sync.Mutex // guards closing, welcomed and early against pion callbacks and the room
	closing  bool
	welcomed bool
	early    [][]byte // messages from the room that raced ahead of welcome

	rtt      rtts
	link     *forward.Link // the subscribe connection's congestion control
	route    *wire.Route   // the subscribe connection's data-plane route
	pubRoute *wire.Route   // the publish connection's (nil: none, or pion's path)
	recv     *received     // the publish connection's receive side at the socket (nil: pion's)

	// screenMids are the latest publish offer's screen share mids: written by
	// the loop before pion sees the offer, read by pion's OnTrack.
	screenMids atomic.Pointer[[]string]

	remote string // client IP address
	hints  Hints  // what the WebSocket URL said (region, bridge)
	region string // the participant's region as placed ("": the node's)
	// pinged carries the WebSocket ping's round trip, once (pingRTT); nil: not timed.
	pinged chan time.Duration

	// Owned by the loop.
	claims   *auth.Claims       // the verified token; nil in dev mode without one
	perms    signal.Permissions // what the token grants
	id, name string
	room     *room.Room
	pub, sub *webrtc.PeerConnection
	nego     negotiation
	senders  map[*forward.DownTrack]*webrtc.RTPSender
	pending  map[string][]webrtc.ICECandidateInit // candidates before a remote description
	idle     idleWatch
}

var (
	errReplaced     = errors.New("replaced by a resumed session")
	errSessionEnded = errors.New("session ended")
)

func causeText(ctx context.Context) string {
	if c := context.Cause(ctx); c != nil {
		return c.Error()
	}
	return ""
}

// Serve runs a session on an accepted WebSocket from the client at remote (its IP
// address), with the hints of the WebSocket URL, until it ends.
func Serve(ctx context.Context, conn *websocket.Conn, deps Deps, remote string, hints Hints) {
	ctx, cancel := context.WithCancelCause(ctx)
	if deps.MaxMessageBytes <= 0 {
		deps.MaxMessageBytes = signal.MaxFrameBytes
	}
	s := &Session{
		deps: deps, conn: conn, log: deps.Log.With("remote", remote), ctx: ctx, cancel: cancel, remote: remote, hints: hints,
		out:     make(chan []byte, outQueueLen),
		work:    newQueue(),
		senders: map[*forward.DownTrack]*webrtc.RTPSender{},
		pending: map[string][]webrtc.ICECandidateInit{},
		link:    forward.NewLink(bwe.DefaultConfig()),
	}
	if c := deps.Counters; c != nil {
		c.Open.Add(1)
		defer c.Open.Add(-1)
	}
	// Frames up to twice the limit are read and answered with too-large; beyond
	// that the WebSocket layer closes the connection (1009) without reading them.
	conn.SetReadLimit(int64(2 * deps.MaxMessageBytes))
	in := make(chan signal.Incoming)
	writerDone := make(chan struct{})
	go func() { defer close(writerDone); s.writeLoop() }()
	// Reads use their own context: cancelling the session must not tear the socket
	// down before the writer has flushed the final error or bye.
	readCtx, stopReading := context.WithCancel(context.Background())
	defer stopReading()
	s.goOwned(func() { s.readLoop(readCtx, in) })
	if deps.ClientRTT != nil {
		s.pinged = make(chan time.Duration, 1)
		s.goOwned(s.pingRTT)
	}
	s.run(in)
	s.shutdown()
	close(s.out)
	<-writerDone
	_ = conn.Close(closeCode(context.Cause(ctx)), "")
	s.wg.Wait()
}

// goOwned starts f as a goroutine the session waits for, unless it is closing.
func (s *Session) goOwned(f func()) bool { return s.goIn(&s.wg, f) }

func (s *Session) goIn(wg *sync.WaitGroup, f func()) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return false
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer s.recoverPanic()
		f()
	}()
	return true
}

func (s *Session) recoverPanic() {
	if r := recover(); r != nil {
		s.log.Error("session goroutine panicked", "panic", r)
		s.cancel(errors.New("internal error"))
	}
}

func (s *Session) readLoop(ctx context.Context, in chan<- signal.Incoming) {
	rate := newRateGuard(s.deps.SignalingRate, s.deps.SignalingBurst)
	for {
		_, frame, err := s.conn.Read(ctx)
		if err != nil {
			s.cancel(err)
			return
		}
		if c := s.deps.Counters; c != nil {
			c.Messages.Add(1)
		}
		if ok, pe := rate.check(time.Now()); !ok {
			if pe != nil {
				s.sendError(pe)
				if pe.Fatal {
					s.cancel(pe)
					return
				}
			}
			continue
		}
		msg, err := signal.DecodeMax(frame, s.deps.MaxMessageBytes)
		if err != nil {
			pe := signal.AsProtocolError(err)
			s.sendError(pe)
			if pe.Fatal {
				s.cancel(pe)
				return
			}
			continue
		}
		select {
		case in <- msg:
		case <-s.ctx.Done():
			return
		}
	}
}

func (s *Session) writeLoop() {
	w := newFrameWriter(s.conn, writeTimeout)
	defer w.stop()
	for frame := range s.out {
		if err := w.write(frame); err != nil {
			s.cancel(err)
			for range s.out { // drain so senders never block
			}
			return
		}
	}
}

// Send implements room.Member: queue a message, closing a client too slow to read.
func (s *Session) Send(typ string, body any) {
	frame, err := signal.Encode(typ, body)
	if err != nil {
		s.log.Error("encode", "type", typ, "err", err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return
	}
	if !s.welcomed && typ != signal.TypeError && typ != signal.TypeBye && typ != signal.TypeRedirect {
		s.early = append(s.early, frame)
		return
	}
	s.enqueueLocked(frame)
}

// sendFirst sends welcome, then whatever the room said before it.
func (s *Session) sendFirst(w signal.Welcome) {
	frame, err := signal.Encode(signal.TypeWelcome, w)
	if err != nil {
		s.cancel(err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.welcomed = true
	s.enqueueLocked(frame)
	for _, f := range s.early {
		s.enqueueLocked(f)
	}
	s.early = nil
}

func (s *Session) enqueueLocked(frame []byte) {
	if s.closing {
		return
	}
	select {
	case s.out <- frame:
	default:
		s.cancel(errors.New("client too slow: signaling queue full"))
	}
}

func (s *Session) sendError(pe *signal.ProtocolError) {
	s.deps.Counters.countError(pe.Code)
	s.Send(signal.TypeError, pe.ToMessage())
}

// ID implements room.Member.
func (s *Session) ID() string { return s.id }

// Replaced implements room.Member.
func (s *Session) Replaced() { s.cancel(errReplaced) }

// AddDownTrack implements room.Member.
func (s *Session) AddDownTrack(d *forward.DownTrack) { s.work.push(func() { s.addDown(d) }) }

// RemoveDownTrack implements room.Member.
func (s *Session) RemoveDownTrack(d *forward.DownTrack) { s.work.push(func() { s.removeDown(d) }) }

func closeCode(cause error) websocket.StatusCode {
	var pe *signal.ProtocolError
	switch {
	case errors.As(cause, &pe):
		return websocket.StatusPolicyViolation
	case errors.Is(cause, errReplaced), errors.Is(cause, errLeft), errors.Is(cause, errRemoved), errors.Is(cause, errRedirected):
		return websocket.StatusNormalClosure
	default:
		return websocket.StatusGoingAway
	}
}
