package server

import (
	"context"
	"time"

	"github.com/podium-sfu/podium/internal/session"
	"github.com/podium-sfu/podium/internal/signal"
)

// drainPoll is how often Drain looks whether every participant has left.
const drainPoll = 100 * time.Millisecond

// Drain shuts the server down gracefully (SIGTERM): it stops taking participants
// (/readyz answers 503 "draining", joins get a draining error), tells everyone
// with a draining message, and lets rooms go on until every participant has left
// or timeout has passed (or ctx ended). Then it ends the remaining sessions, each
// with a bye. Serve keeps answering HTTP until its own context ends. Only the
// first call does anything.
func (s *Server) Drain(ctx context.Context, timeout time.Duration) {
	if !s.draining.CompareAndSwap(false, true) {
		return
	}
	deadline := time.Now().Add(timeout)
	s.log.Info("draining: no new participants", "timeout", timeout, "participants", s.hub.Sessions(), "rooms", len(s.hub.Rooms()))
	s.hub.Drain(signal.Draining{Deadline: deadline.UTC().Format(time.RFC3339), Seconds: int((timeout + time.Second/2) / time.Second)})
	s.redirectAll()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	tick := time.NewTicker(drainPoll)
	defer tick.Stop()
wait:
	for s.hub.Sessions() > 0 {
		select {
		case <-tick.C:
		case <-timer.C:
			break wait
		case <-ctx.Done():
			break wait
		}
	}
	if n := s.hub.Sessions(); n > 0 {
		s.log.Info("drain timeout: closing the remaining sessions", "participants", n)
	} else {
		s.log.Info("drained: every participant has left")
	}
	s.cancelSessions(session.ErrShutdown)
}

// Draining reports whether Drain was called.
func (s *Server) Draining() bool { return s.draining.Load() }

func (s *Server) ready() (bool, string) {
	if s.draining.Load() {
		return false, "draining"
	}
	return true, ""
}

// redirectAll moves a draining cluster node's participants to other bridges
// (docs/cluster.md, Failover): each room's to the bridge selection gives it
// without this node, so that the conference stays together. Clients follow the
// redirect at once with their join; a room with nowhere to go drains as a
// single node's does.
func (s *Server) redirectAll() {
	if s.node == nil || !s.cfg.Clustered() {
		return
	}
	s.node.Touch() // the registry says draining now: others stop sending joins here
	for _, rm := range s.hub.Rooms() {
		rd := s.choose(rm.Name(), s.cfg.Region, s.node.ID())
		if rd == nil {
			continue
		}
		n := rm.Redirect(*rd)
		s.log.Info("draining: participants sent to another bridge", "room", rm.Name(), "participants", n, "node", rd.Node, "reason", rd.Reason)
	}
}
