package web

import (
	"fmt"
	"net/url"

	"github.com/podium-sfu/podium/internal/auth"
)

// Hints are what a signaling WebSocket's URL says about where the client
// belongs in a cluster (docs/cluster.md): /ws?region=NAME&bridge=NODE&lost=NODE.
type Hints struct {
	Region string // the participant's region, overriding the node's
	Bridge string // the node a redirect sent the client to
	Lost   string // the bridge the client lost (failover): not to be chosen again
}

// wsHints reads and checks the hints: each is 1 to 32 of a-z, A-Z, 0-9, - and _.
func wsHints(q url.Values) (Hints, error) {
	h := Hints{Region: q.Get("region"), Bridge: q.Get("bridge"), Lost: q.Get("lost")}
	for _, f := range []struct{ name, v string }{{"region", h.Region}, {"bridge", h.Bridge}, {"lost", h.Lost}} {
		if f.v != "" && !auth.ValidRegion(f.v) {
			return Hints{}, fmt.Errorf("%s: %q must be 1 to 32 of a-z, A-Z, 0-9, - and _", f.name, truncate(f.v))
		}
	}
	return h, nil
}
