package cluster

import (
	"fmt"
	"testing"
	"time"
)

func TestClientRTTs(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := func(v float64) time.Duration { return time.Duration(v * 1e6) }
	c := NewClientRTTs()
	if f := c.Figures(t0); len(f) != 0 {
		t.Fatalf("figures without samples: %v", f)
	}
	// eu: three participants, one of them far off (a bad path): the median holds.
	c.Observe(t0, "eu", "a", ms(100))
	c.Observe(t0, "eu", "b", ms(110))
	c.Observe(t0, "eu", "c", ms(900))
	c.Observe(t0, "us", "d", ms(40))
	c.Observe(t0, "us", "e", ms(60))
	c.Observe(t0, "us", "f", 0) // unmeasured: ignored
	f := c.Figures(t0)
	if f["eu"] != (RegionRTT{MS: 110, N: 3}) || f["us"] != (RegionRTT{MS: 50, N: 2}) || len(f) != 2 {
		t.Fatalf("figures %v", f)
	}
	// A participant's samples are smoothed (an eighth of each new one).
	c.Observe(t0.Add(time.Minute), "us", "d", ms(120))
	if got := c.Figures(t0.Add(time.Minute))["us"]; got != (RegionRTT{MS: 55, N: 2}) {
		t.Fatalf("after d's 120 ms sample: %v, want median of 50 and 60", got)
	}
	// Participants heard from more than the window ago no longer count.
	c.Observe(t0.Add(ClientRTTWindow), "eu", "a", ms(100))
	late := t0.Add(ClientRTTWindow + time.Second)
	if f := c.Figures(late); f["eu"] != (RegionRTT{MS: 100, N: 1}) || f["us"] != (RegionRTT{MS: 120.0/8 + 40*7.0/8, N: 1}) {
		t.Fatalf("after the window: %v", f)
	}
	if f := c.Figures(late.Add(ClientRTTWindow)); len(f) != 0 {
		t.Fatalf("everyone stale, yet %v", f)
	}
}

// Regions and participants come from clients: both are bounded, the ones
// heard from longest ago giving way.
func TestClientRTTsBounded(t *testing.T) {
	t0 := time.Unix(1000, 0)
	c := NewClientRTTs()
	for i := range maxClients + 10 {
		c.Observe(t0.Add(time.Duration(i)*time.Second), "eu", fmt.Sprintf("p%d", i), time.Duration(i+1)*time.Millisecond)
	}
	now := t0.Add(time.Hour / 10)
	if got := c.Figures(now)["eu"]; got.N != maxClients || got.MS != float64(10+1+10+maxClients)/2 {
		t.Fatalf("eu after %d participants: %+v", maxClients+10, got)
	}
	for i := range maxRegions + 5 {
		c.Observe(now.Add(time.Duration(i)*time.Second), fmt.Sprintf("r%d", i), "x", 50*time.Millisecond)
	}
	f := c.Figures(now.Add(time.Minute))
	if len(f) != maxRegions {
		t.Fatalf("%d regions kept, want %d", len(f), maxRegions)
	}
	if _, ok := f["eu"]; ok {
		t.Fatal("eu, heard from longest ago, was kept")
	}
	if _, ok := f[fmt.Sprintf("r%d", maxRegions+4)]; !ok {
		t.Fatal("the newest region was not kept")
	}
}

// The registry's figures feed Select: with the joiner's region's figures at
// both bridges and the relay's RTT between them, an eu participant joining a
// conference on the us bridge stays there when the bridges are far apart,
// where Algorithm 3 splits it onto the eu bridge.
func TestRTTsFromRegistry(t *testing.T) {
	nodes := []NodeInfo{
		{ID: "n-us", Region: "us", Healthy: true, Paths: Paths{RelayRTTMS: map[string]float64{"n-eu": 90},
			ClientRTT: map[string]RegionRTT{"eu": {MS: 20, N: 1}, "us": {MS: 10, N: 4}}}},
		{ID: "n-eu", Region: "eu", Healthy: true, Paths: Paths{RelayRTTMS: map[string]float64{"n-us": 110},
			ClientRTT: map[string]RegionRTT{"eu": {MS: 15, N: 2}}}},
	}
	rtt := BridgeRTTs(nodes)
	if v, ok := rtt("n-us", "n-eu"); !ok || v != 100 {
		t.Fatalf("bridge RTT %v %v, want the mean of both ends' 90 and 110", v, ok)
	}
	if v, ok := rtt("n-eu", "n-us"); !ok || v != 100 {
		t.Fatalf("bridge RTT the other way %v %v", v, ok)
	}
	if _, ok := rtt("n-us", "n-ap"); ok {
		t.Fatal("an RTT to a node nobody measured")
	}
	if got := ClientRTTFor(nodes, "eu"); len(got) != 2 || got["n-us"] != 20 || got["n-eu"] != 15 {
		t.Fatalf("eu joiner's RTTs %v", got)
	}
	if got := ClientRTTFor(nodes, "us"); len(got) != 1 || got["n-us"] != 10 {
		t.Fatalf("us joiner's RTTs %v", got)
	}
	in := Selection{Region: "eu", Nodes: nodes, Conference: []string{"n-us"}, Members: []Member{{"n-us", 10}, {"n-us", 0}}}
	if c, _ := Select(in); c.Node != "n-eu" || c.Reason != ReasonLeastLoadedInRegion {
		t.Fatalf("without RTTs: %+v, want Algorithm 3's split", c)
	}
	in.ClientRTT, in.BridgeRTT = ClientRTTFor(nodes, "eu"), rtt
	if c, _ := Select(in); c.Node != "n-us" || c.Reason != ReasonKeepOneBridge {
		t.Fatalf("with the registry's RTTs: %+v, want n-us (20 ms against 15 + 100)", c)
	}
	// No figure of the us bridge for eu participants: Algorithm 3 again.
	delete(nodes[0].ClientRTT, "eu")
	in.ClientRTT = ClientRTTFor(nodes, "eu")
	if c, _ := Select(in); c.Node != "n-eu" || c.Reason != ReasonLeastLoadedInRegion {
		t.Fatalf("without the us bridge's eu figure: %+v", c)
	}
}
