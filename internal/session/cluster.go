package session

import (
	"errors"
	"time"

	"github.com/podium-sfu/podium/internal/auth"
	"github.com/podium-sfu/podium/internal/signal"
)

// Hints are what a client's WebSocket URL tells about where it belongs
// (docs/cluster.md): its region (?region=) and the bridge a redirect sent it
// to (?bridge=), and the bridge it lost (?lost=, failover). All are checked by
// the web layer; all only steer the choice of bridge.
type Hints struct {
	Region string
	Bridge string
	Lost   string
}

// errRedirected ends a session whose client was sent to another bridge.
var errRedirected = errors.New("redirected to another bridge")

// place asks the cluster which bridge serves the join: a token's region claim
// wins over the URL's. When another node does, the client gets a redirect and
// the session ends (normal closure).
func (s *Session) place(room string, claims *auth.Claims, resume bool) error {
	if s.deps.Place == nil {
		return nil
	}
	region := s.hints.Region
	if claims != nil && claims.Region != "" {
		region = claims.Region
	}
	s.region = region
	rd := s.deps.Place(room, region, s.hints.Bridge, s.hints.Lost, resume)
	if rd == nil {
		return nil // its RTT to this node comes from its connections (sampleRTT)
	}
	s.reportPing(region)
	s.log.Info("redirected to another bridge", "room", room, "node", rd.Node, "region", rd.Region, "reason", rd.Reason)
	s.Send(signal.TypeRedirect, *rd)
	return errRedirected
}

// reportPing gives bridge selection a redirected client's RTT to this node,
// which it would otherwise never learn (docs/cluster.md, Where the RTTs come
// from): the WebSocket ping's, waited for at most pingWait. Clients are told
// apart by address here (they have no participant id), one figure each.
func (s *Session) reportPing(region string) {
	if s.pinged == nil || s.deps.ClientRTT == nil {
		return
	}
	t := time.NewTimer(pingWait)
	defer t.Stop()
	select {
	case d := <-s.pinged:
		s.deps.ClientRTT(region, "addr:"+s.remote, d)
	case <-t.C:
	}
}

// fallbacks are the welcome's node and fallback URLs (docs/cluster.md, Failover).
func (s *Session) fallbacks() (string, []string) {
	if s.deps.Fallbacks == nil {
		return "", nil
	}
	return s.deps.Fallbacks(s.region)
}
