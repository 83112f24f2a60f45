package cluster

import (
	"sort"
	"time"
)

// The RTTs bridge selection runs on (docs/cluster.md, Where the RTTs come
// from): each bridge publishes in its registry entry the round trips its
// participants measured to it (ICE), aggregated by the participants' region,
// and its relay's round trips to the other bridges (relay probes). A joiner of
// region R is taken to be as far from a bridge as R's participants there were.

// RegionRTT is a bridge's figure for one region's participants: the median of
// their smoothed round trips to it, over N participants.
type RegionRTT struct {
	MS float64 `json:"ms"`
	N  int     `json:"n"`
}

const (
	// ClientRTTWindow: a participant's RTT counts for this long after its
	// latest sample, so a bridge keeps a figure for a region between calls.
	ClientRTTWindow = 10 * time.Minute
	// maxClients and maxRegions bound the aggregation: regions come from
	// clients (?region=), so anyone can name one.
	maxClients = 64
	maxRegions = 32
)

// ClientRTTs aggregates the round trips a bridge's participants measured to
// it, by region. Pure: time is an argument; not safe for concurrent use.
type ClientRTTs struct {
	regions map[string]map[string]*clientRTT // region → participant → its RTT
}

type clientRTT struct {
	ms float64 // RFC 6298's SRTT of its samples
	at time.Time
}

// NewClientRTTs makes an empty aggregation.
func NewClientRTTs() *ClientRTTs {
	return &ClientRTTs{regions: map[string]map[string]*clientRTT{}}
}

// Observe takes participant's RTT sample at now. When its region already
// holds maxClients participants, the one heard from longest ago makes room;
// a new region beyond maxRegions replaces the one heard from longest ago.
func (c *ClientRTTs) Observe(now time.Time, region, participant string, rtt time.Duration) {
	if rtt <= 0 {
		return
	}
	ms := float64(rtt) / 1e6
	r := c.regions[region]
	if r == nil {
		if len(c.regions) >= maxRegions {
			delete(c.regions, c.stalest())
		}
		r = map[string]*clientRTT{}
		c.regions[region] = r
	}
	if s := r[participant]; s != nil {
		s.ms += (ms - s.ms) / 8
		s.at = now
		return
	}
	if len(r) >= maxClients {
		oldest := ""
		for id, s := range r {
			if oldest == "" || s.at.Before(r[oldest].at) || s.at.Equal(r[oldest].at) && id < oldest {
				oldest = id
			}
		}
		delete(r, oldest)
	}
	r[participant] = &clientRTT{ms: ms, at: now}
}

// stalest is the region whose latest sample is the oldest.
func (c *ClientRTTs) stalest() string {
	stalest, at := "", time.Time{}
	for region, r := range c.regions {
		latest := time.Time{}
		for _, s := range r {
			if s.at.After(latest) {
				latest = s.at
			}
		}
		if stalest == "" || latest.Before(at) || latest.Equal(at) && region < stalest {
			stalest, at = region, latest
		}
	}
	return stalest
}

// Figures are the aggregation at now: for each region, the median over the
// participants heard from within ClientRTTWindow. Older samples are dropped.
func (c *ClientRTTs) Figures(now time.Time) map[string]RegionRTT {
	out := map[string]RegionRTT{}
	var v []float64
	for region, r := range c.regions {
		v = v[:0]
		for id, s := range r {
			if now.Sub(s.at) > ClientRTTWindow {
				delete(r, id)
				continue
			}
			v = append(v, s.ms)
		}
		if len(v) == 0 {
			delete(c.regions, region)
			continue
		}
		out[region] = RegionRTT{MS: median(v), N: len(v)}
	}
	return out
}

func median(v []float64) float64 {
	sort.Float64s(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// ClientRTTFor is Selection.ClientRTT for a joiner of region: each node's
// figure for that region, where it has one.
func ClientRTTFor(nodes []NodeInfo, region string) map[string]float64 {
	out := map[string]float64{}
	for _, n := range nodes {
		if f, ok := n.ClientRTT[region]; ok && f.N > 0 && f.MS > 0 {
			out[n.ID] = f.MS
		}
	}
	return out
}

// BridgeRTTs is Selection.BridgeRTT from the nodes' relay probes: the mean of
// what either end measured of the other (one end's alone if the other's is
// missing); unknown when neither measured.
func BridgeRTTs(nodes []NodeInfo) func(a, b string) (float64, bool) {
	measured := map[string]map[string]float64{}
	for _, n := range nodes {
		measured[n.ID] = n.RelayRTTMS
	}
	return func(a, b string) (float64, bool) {
		sum, k := 0.0, 0
		for _, v := range []float64{measured[a][b], measured[b][a]} {
			if v > 0 {
				sum += v
				k++
			}
		}
		if k == 0 {
			return 0, false
		}
		return sum / float64(k), true
	}
}
