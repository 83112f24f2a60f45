package cluster

import (
	"math"
	"sort"
)

// Reason says why Select chose a bridge.
type Reason string

// Reasons, from thesis Algorithm 3 and from the RTT rule that improves on it.
const (
	// Algorithm 3, the conference's first participant: least loaded in the
	// participant's region, else least loaded anywhere.
	ReasonInitialInRegion Reason = "initial-least-loaded-in-region"
	ReasonInitialAnywhere Reason = "initial-least-loaded"
	// Algorithm 3, a conference that has bridges: one of them in the
	// participant's region; else the least loaded in the region (a split).
	ReasonConferenceInRegion  Reason = "conference-bridge-in-region"
	ReasonLeastLoadedInRegion Reason = "least-loaded-in-region"
	// Where Algorithm 3 would split the conference onto the least-loaded node
	// anywhere although no node is in the participant's region (a second
	// bridge no nearer to it than the first): its least-loaded bridge instead.
	ReasonConferenceNoRegion Reason = "conference-bridge-no-region"
	// With measured RTTs: the first participant goes to the nearest node (load
	// breaking near-ties); later ones stay on a conference bridge unless
	// another bridge lowers their mean end-to-end RTT to the others by more
	// than the margin. These name a choice only where it differs from
	// Algorithm 3's; where the RTTs agree with it, its reason stands.
	ReasonNearest       Reason = "nearest"
	ReasonKeepOneBridge Reason = "keep-conference-bridge"
	ReasonSplitLowerRTT Reason = "split-lowers-rtt"
)

// Member is a participant already in the conference: the bridge serving it and
// its RTT to that bridge in ms (0: not measured). A member's own leg is the
// same whichever bridge the newcomer takes, so it moves every candidate's cost
// alike: unmeasured, it counts as 0 (CostMS is low by it; the choice is not
// changed).
type Member struct {
	Bridge string
	RTTMS  float64
}

// Selection is everything Select decides on.
type Selection struct {
	// Region is the joining participant's region.
	Region string
	// Nodes are the registry's nodes; unhealthy, draining or busy ones are
	// never chosen.
	Nodes []NodeInfo
	// Conference are the nodes now serving the conference.
	Conference []string
	// Members are the conference's participants.
	Members []Member
	// ClientRTT is the joining participant's RTT to nodes (ms), where measured.
	ClientRTT map[string]float64
	// BridgeRTT is the RTT between two bridges (ms), where measured; nil: none.
	BridgeRTT func(a, b string) (float64, bool)
	// MarginMS: a split (or a node other than the nearest) must win by more
	// than this; 0 means DefaultMarginMS.
	MarginMS float64
}

// DefaultMarginMS is the RTT gain a split must bring to be worth a second bridge.
const DefaultMarginMS = 10

// Choice is Select's answer.
type Choice struct {
	Node   string
	Reason Reason
	// CostMS is the chosen bridge's mean end-to-end RTT from the participant to
	// the members (its own RTT to the bridge without members); NaN: unknown.
	CostMS float64
}

// loadScore orders nodes by load: the CPU share in steps of 10 % (so that
// nodes doing the same work, measured a little apart, tie and every node breaks
// the tie alike, by id) plus one percent per participant.
func loadScore(l Load) float64 { return math.Round(l.CPU*10)/10 + 0.01*float64(l.Participants) }

// Select picks the bridge for a participant joining a conference (pure; the
// same inputs in any order give the same answer). ok is false when no node is
// usable. Without RTTs it is thesis Algorithm 3; with them, see the Reasons.
func Select(in Selection) (Choice, bool) {
	margin := in.MarginMS
	if margin <= 0 {
		margin = DefaultMarginMS
	}
	usable := make([]NodeInfo, 0, len(in.Nodes))
	for _, n := range in.Nodes {
		if n.Healthy && !n.Load.Draining && !n.Load.Busy {
			usable = append(usable, n)
		}
	}
	if len(usable) == 0 {
		return Choice{CostMS: math.NaN()}, false
	}
	// all_sfus ordered by load (ties by id, for determinism).
	sort.Slice(usable, func(i, j int) bool {
		a, b := loadScore(usable[i].Load), loadScore(usable[j].Load)
		if a != b {
			return a < b
		}
		return usable[i].ID < usable[j].ID
	})
	inConf := map[string]bool{}
	for _, id := range in.Conference {
		inConf[id] = true
	}
	var conf, region []NodeInfo
	var confInRegion []NodeInfo
	for _, n := range usable {
		if inConf[n.ID] {
			conf = append(conf, n)
		}
		if n.Region == in.Region {
			region = append(region, n)
			if inConf[n.ID] {
				confInRegion = append(confInRegion, n)
			}
		}
	}
	cost := func(id string) (float64, bool) { return meanRTT(in, id) }
	choose := func(n NodeInfo, r Reason) (Choice, bool) {
		c, ok := cost(n.ID)
		if !ok {
			c = math.NaN()
		}
		return Choice{Node: n.ID, Reason: r, CostMS: c}, true
	}

	if len(conf) == 0 { // SELECTINITIAL
		naive, why := usable[0], ReasonInitialAnywhere
		if len(region) > 0 {
			naive, why = region[0], ReasonInitialInRegion
		}
		if best, ok := nearest(usable, in.ClientRTT, margin); ok && best.ID != naive.ID {
			return choose(best, ReasonNearest)
		}
		return choose(naive, why)
	}

	// Algorithm 3's answer, but for its last line: with no node in the
	// participant's region, a split gains no locality, so stay.
	naive, why := conf[0], ReasonConferenceNoRegion
	switch {
	case len(confInRegion) > 0:
		naive, why = confInRegion[0], ReasonConferenceInRegion
	case len(region) > 0:
		naive, why = region[0], ReasonLeastLoadedInRegion
	}
	// With RTTs for the conference's bridges and the naive choice, keep the
	// conference on its bridges unless another lowers the end-to-end RTT.
	bestConf, bestConfCost, known := NodeInfo{}, math.Inf(1), true
	for _, n := range conf {
		c, ok := cost(n.ID)
		if !ok {
			known = false
			break
		}
		if c < bestConfCost {
			bestConf, bestConfCost = n, c
		}
	}
	if known {
		if inConf[naive.ID] {
			if c, _ := cost(naive.ID); c <= bestConfCost+margin {
				return choose(naive, why) // Algorithm 3's choice, and no worse
			}
			return choose(bestConf, ReasonKeepOneBridge)
		}
		if c, ok := cost(naive.ID); ok {
			if c < bestConfCost-margin {
				return choose(naive, ReasonSplitLowerRTT)
			}
			return choose(bestConf, ReasonKeepOneBridge)
		}
	}
	return choose(naive, why)
}

// nearest is the node with the lowest client RTT, the least loaded of those
// within margin of it; ok is false unless every node's RTT is known.
func nearest(nodes []NodeInfo, rtt map[string]float64, margin float64) (NodeInfo, bool) {
	best := math.Inf(1)
	for _, n := range nodes {
		r, ok := rtt[n.ID]
		if !ok || r <= 0 {
			return NodeInfo{}, false
		}
		best = min(best, r)
	}
	for _, n := range nodes { // in load order
		if rtt[n.ID] <= best+margin {
			return n, true
		}
	}
	return NodeInfo{}, false
}

// meanRTT is the mean end-to-end RTT from the joining participant through
// bridge to each member: client→bridge, bridge→member's bridge, member's
// bridge→member. ok is false when the newcomer's RTT to bridge or a
// bridges' RTT it needs is not measured.
func meanRTT(in Selection, bridge string) (float64, bool) {
	c, ok := in.ClientRTT[bridge]
	if !ok || c <= 0 {
		return 0, false
	}
	if len(in.Members) == 0 {
		return c, true
	}
	sum := 0.0
	for _, m := range in.Members {
		hop := 0.0
		if m.Bridge != bridge {
			if in.BridgeRTT == nil {
				return 0, false
			}
			if hop, ok = in.BridgeRTT(bridge, m.Bridge); !ok {
				return 0, false
			}
		}
		sum += c + hop + max(m.RTTMS, 0)
	}
	return sum / float64(len(in.Members)), true
}
