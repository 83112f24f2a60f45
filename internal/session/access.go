package session

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/podium-sfu/podium/internal/auth"
	"github.com/podium-sfu/podium/internal/limit"
	"github.com/podium-sfu/podium/internal/room"
	"github.com/podium-sfu/podium/internal/signal"
)

// ErrShutdown is the cause with which the server ends every session when it
// stops: the client gets a bye with code shutdown.
var ErrShutdown = errors.New("server shutting down")

// errRemoved ends a session an administrator removed (or whose room was closed).
var errRemoved = errors.New("removed")

// now is the clock for token checks.
func (s *Session) now() time.Time {
	if s.deps.Now != nil {
		return s.deps.Now()
	}
	return time.Now()
}

// authorize checks a join's token: it returns the permissions the session gets
// and the verified claims (nil for a tokenless join in dev mode).
func (s *Session) authorize(token, roomName string) (signal.Permissions, *auth.Claims, error) {
	all := signal.Permissions{Publish: true, Subscribe: true, Admin: true}
	if token == "" {
		if s.deps.Dev {
			return all, nil, nil
		}
		return signal.Permissions{}, nil, signal.Errorf(signal.CodeUnauthorized, true,
			"this server requires a token to join; ask for a link that carries one (…?token=…)")
	}
	if s.deps.Auth == nil { // dev mode without keys: tokens cannot be checked, nor are they needed
		return all, nil, nil
	}
	claims, err := s.verify(token)
	if err != nil {
		return signal.Permissions{}, nil, err
	}
	if !claims.AllowsRoom(roomName) {
		return signal.Permissions{}, nil, signal.Errorf(signal.CodeForbidden, true, "the token is for room %q, not %q", claims.Room, roomName)
	}
	return permissions(claims.Permissions), claims, nil
}

// verify checks a token's signature and validity, with fatal errors.
func (s *Session) verify(token string) (*auth.Claims, error) {
	claims, err := s.deps.Auth.Verify(token, s.now())
	switch {
	case errors.Is(err, auth.ErrExpired):
		return nil, signal.Errorf(signal.CodeTokenExpired, true, "%v", err)
	case err != nil:
		return nil, signal.Errorf(signal.CodeUnauthorized, true, "token rejected: %v", err)
	}
	return claims, nil
}

func permissions(p auth.Permissions) signal.Permissions {
	return signal.Permissions{Publish: p.Publish, Subscribe: p.Subscribe, Admin: p.Admin}
}

// allow checks a privileged action against the session's token: still valid and
// granting perm. Errors are not fatal: the client may refresh its token.
func (s *Session) allow(what, perm string, granted bool) error {
	if s.claims != nil {
		if err := s.claims.Valid(s.now()); err != nil {
			return signal.Errorf(signal.CodeTokenExpired, false, "%s: %v; send a fresh token", what, err)
		}
	}
	if !granted {
		return signal.Errorf(signal.CodeForbidden, false, "%s needs the %s permission, which your token does not grant", what, perm)
	}
	return nil
}

// handleToken replaces the session's token with a fresh one for the same room
// and identity; its permissions apply from now on to publishing and room
// settings (what the session receives, and whether it has a publish connection
// at all, was decided at join: an audience member rejoins to publish).
func (s *Session) handleToken(m *signal.TokenRefresh) error {
	if s.deps.Auth == nil {
		return nil // dev mode without keys: nothing to check
	}
	claims, err := s.deps.Auth.Verify(m.Token, s.now())
	switch {
	case errors.Is(err, auth.ErrExpired):
		return signal.Errorf(signal.CodeTokenExpired, false, "%v", err)
	case err != nil:
		return signal.Errorf(signal.CodeUnauthorized, false, "token rejected: %v", err)
	case !claims.AllowsRoom(s.room.Name()):
		return signal.Errorf(signal.CodeForbidden, false, "the token is for room %q, not %q", claims.Room, s.room.Name())
	case s.claims != nil && claims.Identity != s.claims.Identity:
		return signal.Errorf(signal.CodeForbidden, false, "the token is for %q, this session is %q", claims.Identity, s.claims.Identity)
	}
	subscribed, publishes := s.perms.Subscribe, s.pub != nil
	s.claims = claims
	s.perms = permissions(claims.Permissions)
	s.perms.Subscribe = subscribed
	s.perms.Publish = s.perms.Publish && publishes
	return nil
}

// joinError maps the hub's refusals onto protocol errors.
func joinError(err error, limits room.Limits) error {
	switch {
	case errors.Is(err, room.ErrDraining), errors.Is(err, room.ErrClosed):
		return signal.Errorf(signal.CodeDraining, true, "%v; try again in a moment (another server may take you)", err)
	case errors.Is(err, room.ErrBusy):
		return signal.Errorf(signal.CodeServerBusy, true, "%v; try again in a minute", err)
	case errors.Is(err, room.ErrTooManyRooms):
		return signal.Errorf(signal.CodeServerFull, true, "%v (%d)", err, limits.MaxRooms)
	case errors.Is(err, room.ErrTooManyRoomsFromAddress):
		return signal.Errorf(signal.CodeTooManyRooms, true, "%v (%d); join an existing room, or wait until one of yours has ended", err, limits.RoomsPerAddress)
	case errors.Is(err, room.ErrE2EERequired):
		return signal.Errorf(signal.CodeE2EERequired, true, "%v: open its link with #e2ee=<passphrase>", err)
	case errors.Is(err, room.ErrRoomFull):
		return signal.Errorf(signal.CodeRoomFull, true, "%v: at most %d participants", err, limits.MaxParticipants)
	}
	return signal.Errorf(signal.CodeInternal, true, "%v", err)
}

// Remove implements room.Member: a bye, then the session ends.
func (s *Session) Remove(code, reason string) {
	s.Send(signal.TypeBye, signal.Bye{Code: code, Reason: reason})
	s.cancel(fmt.Errorf("%w: %s", errRemoved, reason))
}

// Failed implements room.Member: a fatal internal error, then the session ends.
func (s *Session) Failed(reason string) {
	pe := signal.Errorf(signal.CodeInternal, true, "%s", reason)
	s.sendError(pe)
	s.cancel(pe)
}

// Counters are the signaling counters the server exports as metrics.
type Counters struct {
	Open     atomic.Int64  // signaling connections open now
	Joined   atomic.Uint64 // successful joins
	Messages atomic.Uint64 // client messages read
	Lapses   atomic.Uint64 // peer connections pion declared disconnected
	errs     map[string]*atomic.Uint64
	other    atomic.Uint64
}

// NewCounters makes counters for every documented error code.
func NewCounters() *Counters {
	c := &Counters{errs: map[string]*atomic.Uint64{}}
	for _, code := range signal.Codes {
		c.errs[code] = new(atomic.Uint64)
	}
	return c
}

func (c *Counters) countError(code string) {
	if c == nil {
		return
	}
	if n, ok := c.errs[code]; ok {
		n.Add(1)
		return
	}
	c.other.Add(1)
}

// Errors returns the errors sent to clients by code (every code, zeros included).
func (c *Counters) Errors() map[string]uint64 {
	out := make(map[string]uint64, len(c.errs)+1)
	for code, n := range c.errs {
		out[code] = n.Load()
	}
	out["other"] = c.other.Load()
	return out
}

// rateGuard applies signaling-rate to one connection's frames: a frame over the
// rate is dropped, the first of a run of drops with a non-fatal rate-limited
// error; a client that goes on to send a whole burst's worth of dropped frames is
// closed with a fatal one.
type rateGuard struct {
	bucket  limit.Bucket
	rate    int // 0: unlimited
	burst   int
	dropped int // consecutive
}

func newRateGuard(rate, burst int) *rateGuard {
	burst = max(burst, 1)
	return &rateGuard{bucket: limit.NewBucket(float64(rate), burst), rate: rate, burst: burst}
}

// check takes a frame at now: ok means process it; otherwise drop it and send
// pe when it is not nil.
func (g *rateGuard) check(now time.Time) (ok bool, pe *signal.ProtocolError) {
	if g.rate <= 0 || g.bucket.Allow(now) {
		g.dropped = 0
		return true, nil
	}
	g.dropped++
	switch {
	case g.dropped > g.burst:
		return false, signal.Errorf(signal.CodeRateLimited, true, "still sending too fast after %d dropped messages", g.burst)
	case g.dropped == 1:
		return false, signal.Errorf(signal.CodeRateLimited, false,
			"more than %d messages per second: this one and the next ones are dropped until you slow down", g.rate)
	}
	return false, nil
}
