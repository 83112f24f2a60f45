package room

import "github.com/podium-sfu/podium/internal/signal"

// Redirect sends every participant served here rd (a draining bridge of a
// cluster moves them to another: docs/cluster.md, Failover) and returns how
// many it told. Clients follow it and leave; the room does not end them.
func (r *Room) Redirect(rd signal.Redirect) int {
	n := 0
	r.do(func(s *state) {
		for _, m := range s.members {
			if isRemote(m.m) {
				continue
			}
			m.m.Send(signal.TypeRedirect, rd)
			n++
		}
	})
	return n
}
