package cluster

import (
	"math"
	"math/rand"
	"testing"
)

// algorithm3 is thesis Algorithm 3 transcribed literally (all_sfus ordered by
// load), but for line 7 (see ReasonConferenceNoRegion): with the conference's
// bridges and no node in the participant's region, Select keeps the
// conference's least-loaded bridge where the thesis takes the least-loaded
// node anywhere.
func algorithm3(in Selection) string {
	// (Algorithm 3 knows no draining or busy nodes: neither takes a join.)
	var all []NodeInfo
	for _, n := range in.Nodes {
		if takesJoins(n) {
			all = append(all, n)
		}
	}
	for i := range all { // insertion sort by (load, id)
		for j := i; j > 0 && (loadScore(all[j].Load) < loadScore(all[j-1].Load) ||
			loadScore(all[j].Load) == loadScore(all[j-1].Load) && all[j].ID < all[j-1].ID); j-- {
			all[j], all[j-1] = all[j-1], all[j]
		}
	}
	inRegion := func(ns []NodeInfo) []NodeInfo {
		var out []NodeInfo
		for _, n := range ns {
			if n.Region == in.Region {
				out = append(out, n)
			}
		}
		return out
	}
	var conf []NodeInfo
	for _, n := range all {
		for _, c := range in.Conference {
			if c == n.ID {
				conf = append(conf, n)
			}
		}
	}
	if len(conf) == 0 {
		if r := inRegion(all); len(r) > 0 {
			return r[0].ID
		}
		return all[0].ID
	}
	if r := inRegion(conf); len(r) > 0 {
		return r[0].ID
	}
	if r := inRegion(all); len(r) > 0 {
		return r[0].ID
	}
	return conf[0].ID // the thesis: all[0].ID
}

// Table 8.1 (ms): users' RTT to servers by region, rows users, columns servers.
var table81 = map[string]map[string]float64{
	"ap":   {"ap": 329, "eu": 291, "us-e": 242, "us-w": 292},
	"eu":   {"ap": 378, "eu": 110, "us-e": 171, "us-w": 216},
	"us-e": {"ap": 307, "eu": 189, "us-e": 107, "us-w": 116},
	"us-w": {"ap": 241, "eu": 213, "us-e": 137, "us-w": 81},
}

// bridgeRTT: eu-west↔us-east 75 ms is the thesis' figure; the others are assumed.
var bridge81 = map[[2]string]float64{
	{"eu", "us-e"}: 75, {"us-e", "us-w"}: 65, {"eu", "us-w"}: 135,
	{"ap", "us-w"}: 140, {"ap", "us-e"}: 200, {"ap", "eu"}: 250,
}

func nodes81() []NodeInfo {
	var out []NodeInfo
	for _, r := range []string{"ap", "eu", "us-e", "us-w"} {
		out = append(out, NodeInfo{ID: r, Region: r, Healthy: true})
	}
	return out
}

func brtt(a, b string) (float64, bool) {
	if v, ok := bridge81[[2]string{a, b}]; ok {
		return v, true
	}
	v, ok := bridge81[[2]string{b, a}]
	return v, ok
}

func TestSelectTable(t *testing.T) {
	two := []NodeInfo{
		{ID: "a", Region: "eu", Healthy: true, Load: Load{CPU: 0.5}},
		{ID: "b", Region: "eu", Healthy: true, Load: Load{CPU: 0.1}},
		{ID: "c", Region: "us", Healthy: true, Load: Load{CPU: 0.0}},
		{ID: "d", Region: "us", Healthy: false},
		{ID: "e", Region: "ap", Healthy: true, Load: Load{Draining: true}},
	}
	for _, tc := range []struct {
		name   string
		in     Selection
		node   string
		reason Reason
	}{
		{"first participant: least loaded in region", Selection{Region: "eu", Nodes: two}, "b", ReasonInitialInRegion},
		{"first participant, no node in region: least loaded anywhere", Selection{Region: "sa", Nodes: two}, "c", ReasonInitialAnywhere},
		{"draining and dead nodes are never chosen", Selection{Region: "ap", Nodes: two}, "c", ReasonInitialAnywhere},
		{"conference bridge in region, even if loaded", Selection{Region: "eu", Nodes: two, Conference: []string{"a"}}, "a", ReasonConferenceInRegion},
		{"no conference bridge in region: split to least loaded in region", Selection{Region: "eu", Nodes: two, Conference: []string{"c"}}, "b", ReasonLeastLoadedInRegion},
		{"no node in region: the conference's bridge, not a split to the least loaded (Algorithm 3's c)", Selection{Region: "sa", Nodes: two, Conference: []string{"a"}}, "a", ReasonConferenceNoRegion},
		{"conference bridge dead: as if new", Selection{Region: "us", Nodes: two, Conference: []string{"d"}}, "c", ReasonInitialInRegion},
		{"conference bridge refusing joins (overloaded): as if new", Selection{Region: "eu", Nodes: busyOne(two, "a"), Conference: []string{"a"}}, "b", ReasonInitialInRegion},
		// Table 8.1: a European joins a conference on us-e whose members are
		// in us-e. Algorithm 3 splits to eu: 110+75+107 = 292 ms; staying on
		// us-e is 171+107 = 278 ms.
		{"thesis: eu user stays on the us-e bridge", Selection{Region: "eu", Nodes: nodes81(), Conference: []string{"us-e"},
			Members: []Member{{"us-e", 107}, {"us-e", 107}}, ClientRTT: table81["eu"], BridgeRTT: brtt}, "us-e", ReasonKeepOneBridge},
		// us-w to us-e members: split 81+65+107 = 253 > 137+107 = 244: keep.
		{"thesis: us-w user in the middle stays", Selection{Region: "us-w", Nodes: nodes81(), Conference: []string{"us-e"},
			Members: []Member{{"us-e", 107}}, ClientRTT: table81["us-w"], BridgeRTT: brtt}, "us-e", ReasonKeepOneBridge},
		// An eu user joining ap members on the ap bridge: eu→ap is 378 ms; eu
		// bridge then the 250 ms interconnect is 360 ms: worth a split.
		{"far apart: split lowers the RTT", Selection{Region: "eu", Nodes: nodes81(), Conference: []string{"ap"},
			Members: []Member{{"ap", 329}}, ClientRTT: table81["eu"], BridgeRTT: brtt}, "eu", ReasonSplitLowerRTT},
		{"gain under the margin: keep one bridge", Selection{Region: "eu", Nodes: nodes81(), Conference: []string{"ap"},
			Members: []Member{{"ap", 329}}, ClientRTT: table81["eu"], BridgeRTT: brtt, MarginMS: 30}, "ap", ReasonKeepOneBridge},
		{"first participant with RTTs: nearest, not the region's (ap users reach us-e best)", Selection{Region: "ap", Nodes: nodes81(),
			ClientRTT: table81["ap"]}, "us-e", ReasonNearest},
		{"RTTs agreeing with Algorithm 3: its reason", Selection{Region: "eu", Nodes: nodes81(), Conference: []string{"eu"},
			Members: []Member{{"eu", 110}}, ClientRTT: table81["eu"], BridgeRTT: brtt}, "eu", ReasonConferenceInRegion},
		{"first participant, the nearest node in its region: Algorithm 3's reason", Selection{Region: "eu", Nodes: nodes81(),
			ClientRTT: table81["eu"]}, "eu", ReasonInitialInRegion},
		{"a member's RTT unmeasured: the same choice (its leg costs every candidate alike)", Selection{Region: "eu", Nodes: nodes81(),
			Conference: []string{"us-e"}, Members: []Member{{"us-e", 0}, {"us-e", 107}}, ClientRTT: table81["eu"], BridgeRTT: brtt}, "us-e", ReasonKeepOneBridge},
		{"the bridges' RTT unmeasured: Algorithm 3", Selection{Region: "eu", Nodes: nodes81(), Conference: []string{"us-e"},
			Members: []Member{{"us-e", 107}}, ClientRTT: table81["eu"]}, "eu", ReasonLeastLoadedInRegion},
		{"the joiner's RTT to the region's bridge unmeasured: Algorithm 3", Selection{Region: "eu", Nodes: nodes81(), Conference: []string{"us-e"},
			Members: []Member{{"us-e", 107}}, ClientRTT: map[string]float64{"us-e": 171}, BridgeRTT: brtt}, "eu", ReasonLeastLoadedInRegion},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := Select(tc.in)
			if !ok || got.Node != tc.node || got.Reason != tc.reason {
				t.Fatalf("Select = %+v, %v; want %s (%s)", got, ok, tc.node, tc.reason)
			}
		})
	}
	if _, ok := Select(Selection{Region: "eu", Nodes: []NodeInfo{{ID: "x", Healthy: false}}}); ok {
		t.Fatal("a choice without usable nodes")
	}
}

// takesJoins: healthy, neither draining nor refusing joins under overload.
func takesJoins(n NodeInfo) bool { return n.Healthy && !n.Load.Draining && !n.Load.Busy }

// busyOne is nodes with id's overload protection refusing joins.
func busyOne(nodes []NodeInfo, id string) []NodeInfo {
	out := append([]NodeInfo(nil), nodes...)
	for i := range out {
		if out[i].ID == id {
			out[i].Load.Busy = true
		}
	}
	return out
}

func randomSelection(rng *rand.Rand, rtts bool) Selection {
	regions := []string{"ap", "eu", "us-e", "us-w"}
	var in Selection
	in.Region = regions[rng.Intn(len(regions))]
	if rng.Intn(8) == 0 {
		in.Region = "elsewhere"
	}
	nn := 1 + rng.Intn(6)
	for i := range nn {
		n := NodeInfo{ID: string(rune('a' + i)), Region: regions[rng.Intn(len(regions))], Healthy: rng.Intn(6) != 0,
			Load: Load{CPU: float64(rng.Intn(4)) / 4, Participants: rng.Intn(3), Draining: rng.Intn(8) == 0,
				Busy: rng.Intn(8) == 0}}
		in.Nodes = append(in.Nodes, n)
		if rng.Intn(3) == 0 {
			in.Conference = append(in.Conference, n.ID)
		}
	}
	if !rtts {
		return in
	}
	in.ClientRTT = map[string]float64{}
	for _, n := range in.Nodes {
		in.ClientRTT[n.ID] = float64(20 + rng.Intn(300))
	}
	for range rng.Intn(5) {
		b := in.Nodes[rng.Intn(nn)].ID
		if len(in.Conference) > 0 {
			b = in.Conference[rng.Intn(len(in.Conference))]
		}
		in.Members = append(in.Members, Member{Bridge: b, RTTMS: float64(10 + rng.Intn(300))})
	}
	link := map[[2]string]float64{}
	in.BridgeRTT = func(a, b string) (float64, bool) {
		if a > b {
			a, b = b, a
		}
		k := [2]string{a, b}
		if _, ok := link[k]; !ok {
			link[k] = float64(5 + (int(a[0])*7+int(b[0])*13)%200)
		}
		return link[k], true
	}
	return in
}

// Without RTTs, Select is Algorithm 3; the answer never depends on input order.
func TestSelectProperties(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for i := range 5000 {
		in := randomSelection(rng, false)
		got, ok := Select(in)
		usable := 0
		for _, n := range in.Nodes {
			if takesJoins(n) {
				usable++
			}
		}
		if !ok {
			if usable > 0 {
				t.Fatalf("case %d: no choice with %d usable nodes", i, usable)
			}
			continue
		}
		if want := algorithm3(in); got.Node != want {
			t.Fatalf("case %d: Select chose %s (%s), Algorithm 3 %s: %+v", i, got.Node, got.Reason, want, in)
		}
		shuffled := in
		shuffled.Nodes = append([]NodeInfo(nil), in.Nodes...)
		rng.Shuffle(len(shuffled.Nodes), func(a, b int) { shuffled.Nodes[a], shuffled.Nodes[b] = shuffled.Nodes[b], shuffled.Nodes[a] })
		if again, _ := Select(shuffled); again.Node != got.Node {
			t.Fatalf("case %d: order changed the choice: %s then %s", i, got.Node, again.Node)
		}
	}
}

// With RTTs: never a dead or draining node; never worse than the best bridge
// the conference already has; a new bridge only for a gain over the margin.
func TestSelectRTTProperties(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	for i := range 5000 {
		in := randomSelection(rng, true)
		got, ok := Select(in)
		if !ok {
			continue
		}
		var chosen NodeInfo
		bestConf := math.Inf(1)
		for _, n := range in.Nodes {
			if n.ID == got.Node {
				chosen = n
			}
			usable := takesJoins(n)
			for _, c := range in.Conference {
				if c == n.ID && usable {
					if cost, ok := meanRTT(in, n.ID); ok {
						bestConf = min(bestConf, cost)
					}
				}
			}
		}
		if !takesJoins(chosen) {
			t.Fatalf("case %d: chose unusable %+v", i, chosen)
		}
		if math.IsInf(bestConf, 1) {
			continue // a new conference
		}
		if got.CostMS > bestConf+DefaultMarginMS {
			t.Fatalf("case %d: cost %.0f ms, the conference's best bridge %.0f ms (%s)", i, got.CostMS, bestConf, got.Reason)
		}
		if got.Reason == ReasonSplitLowerRTT && got.CostMS >= bestConf-DefaultMarginMS {
			t.Fatalf("case %d: split for %.0f ms against %.0f ms", i, got.CostMS, bestConf)
		}
	}
}
