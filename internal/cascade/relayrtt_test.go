package cascade

import (
	"log/slog"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/podium-sfu/podium/internal/cluster"
)

// TestSubscriptionRTTFromProbes: the RTT a bridge keeps for another bridge —
// which its NACK retries use and its subscriptions hand the origin for the
// one-RTT rule — is the relay probes' when they have one, and the NATS
// request's round trip only otherwise (a single node answering itself: well
// under the probes' 123 ms).
func TestSubscriptionRTTFromProbes(t *testing.T) {
	node, err := cluster.Start(cluster.Config{NodeID: "self"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	if err := node.Handle(subscribeName, func([]byte) ([]byte, error) { return []byte("{}"), nil }); err != nil {
		t.Fatal(err)
	}
	var addr atomic.Pointer[netip.AddrPort]
	addr.Store(&netip.AddrPort{})
	const probed = 123 * time.Millisecond
	for _, tc := range []struct {
		name  string
		rtt   func(string, time.Time) (time.Duration, bool)
		check func(time.Duration) bool
	}{
		{"probes measured", func(node string, _ time.Time) (time.Duration, bool) { return probed, node == "self" }, func(d time.Duration) bool { return d == probed }},
		{"probes silent", func(string, time.Time) (time.Duration, bool) { return 0, false }, func(d time.Duration) bool { return d > 0 && d < probed }},
		{"no probes", nil, func(d time.Duration) bool { return d > 0 && d < probed }},
	} {
		r := newRemotes(Config{Node: node, RelayRTT: tc.rtt, Log: slog.New(slog.DiscardHandler)}, &addr)
		b := &bridge{key: bridgeKey{room: "r", node: "self"}}
		if !r.request(b, nil, nil) {
			t.Fatalf("%s: no request sent", tc.name)
		}
		r.wg.Wait()
		if got := time.Duration(b.rtt.Load()); !tc.check(got) {
			t.Errorf("%s: the bridge's RTT is %v", tc.name, got)
		}
	}
}
