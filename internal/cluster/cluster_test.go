package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"
)

// freePorts reserves n loopback TCP ports (closed again before use).
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
		defer ln.Close()
	}
	return ports
}

type fakeSource struct {
	mu    sync.Mutex
	load  Load
	rooms []RoomEntry
}

func (f *fakeSource) Load() Load { f.mu.Lock(); defer f.mu.Unlock(); return f.load }
func (f *fakeSource) Rooms() []RoomEntry {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]RoomEntry(nil), f.rooms...)
}
func (f *fakeSource) Paths() Paths           { return Paths{} }
func (f *fakeSource) set(rooms ...RoomEntry) { f.mu.Lock(); f.rooms = rooms; f.mu.Unlock() }

// startCluster starts n nodes routed to each other over loopback.
func startCluster(t *testing.T, regions ...string) ([]*Node, []*fakeSource) {
	t.Helper()
	ports := freePorts(t, len(regions))
	var peers []string
	for _, p := range ports {
		peers = append(peers, fmt.Sprintf("nats://127.0.0.1:%d", p))
	}
	nodes := make([]*Node, len(regions))
	srcs := make([]*fakeSource, len(regions))
	for i, region := range regions {
		srcs[i] = &fakeSource{load: Load{Participants: i}}
		n, err := Start(Config{
			NodeID: fmt.Sprintf("node%d", i), Region: region, URL: fmt.Sprintf("http://127.0.0.1:%d/", 9000+i),
			Listen: fmt.Sprintf("127.0.0.1:%d", ports[i]), Peers: peers,
			Heartbeat: 200 * time.Millisecond, TTL: time.Second, Log: testLog(t),
		}, srcs[i])
		if err != nil {
			t.Fatal(err)
		}
		nodes[i] = n
		t.Cleanup(func() {
			t0 := time.Now()
			if os.Getenv("DUMP") != "" && n.ID() == "node0" {
				go func() {
					time.Sleep(2 * time.Second)
					buf := make([]byte, 1<<20)
					os.WriteFile("/tmp/dump.txt", buf[:runtime.Stack(buf, true)], 0o644)
				}()
			}
			n.Close()
			t.Logf("%s closed in %v", n.ID(), time.Since(t0))
		})
	}
	return nodes, srcs
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestClusterRegistryDirectoryAndExpiry(t *testing.T) {
	start := time.Now()
	nodes, srcs := startCluster(t, "eu", "us", "us")
	for _, n := range nodes {
		select {
		case <-n.Ready():
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: jetstream not ready within 30s", n.ID())
		}
	}
	t.Logf("cluster ready after %v", time.Since(start))
	eventually(t, 10*time.Second, "every node sees three healthy nodes", func() bool {
		for _, n := range nodes {
			if n.HealthyNodes(time.Now()) != 3 {
				return false
			}
		}
		return true
	})
	t.Logf("registry converged after %v", time.Since(start))
	t.Logf("t=%v", time.Since(start))
	srcs[1].set(RoomEntry{Room: "a.b", Participants: 2, Speaker: "p1"})
	nodes[1].Touch()
	eventually(t, 5*time.Second, "node0 sees room a.b on node1", func() bool {
		b := nodes[0].Bridges("a.b", time.Now())
		return len(b) == 1 && b[0].Node == "node1" && b[0].Speaker == "p1"
	})
	srcs[1].set()
	nodes[1].Touch()
	eventually(t, 5*time.Second, "room a.b gone", func() bool { return len(nodes[0].Bridges("a.b", time.Now())) == 0 })

	// Request/reply between nodes.
	if err := nodes[2].Handle("echo", func(b []byte) ([]byte, error) { return append([]byte("re:"), b...), nil }); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "echo answered", func() bool {
		ctx, cancel := contextWithTimeout(time.Second)
		defer cancel()
		b, err := nodes[0].Request(ctx, "node2", "echo", []byte("x"))
		return err == nil && string(b) == "re:x"
	})

	t.Logf("t=%v", time.Since(start))
	// A node that stops heartbeating without leaving expires from the registry.
	srcs[2].set(RoomEntry{Room: "r", Participants: 1})
	nodes[2].Touch()
	eventually(t, 5*time.Second, "room r on node2", func() bool { return len(nodes[0].Bridges("r", time.Now())) == 1 })
	killed := time.Now()
	nodes[2].Crash() // dies: no goodbye
	eventually(t, 15*time.Second, "node2 expired", func() bool {
		for _, info := range nodes[0].Nodes(time.Now()) {
			if info.ID == "node2" && info.Healthy {
				return false
			}
		}
		return true
	})
	t.Logf("dead node removed from the registry after %v", time.Since(killed))
	if b := nodes[0].Bridges("r", time.Now()); len(b) != 0 {
		t.Fatalf("room r still served by the dead node: %+v", b)
	}
}

func contextWithTimeout(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}

func testLog(t *testing.T) *slog.Logger {
	if os.Getenv("PODIUM_TEST_LOG") == "" {
		return nil
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
