package server

import (
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/podium-sfu/podium/internal/config"
)

// A single node joins no cluster port and starts quickly.
func TestSingleNodeStartsFast(t *testing.T) {
	cfg := config.Default()
	cfg.HTTP, cfg.UDPPort, cfg.TCPPort = "127.0.0.1:0", 0, 0
	before := listeningTCP(t)
	t0 := time.Now()
	s, err := New(cfg, Options{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(t0)
	select {
	case <-s.Node().Ready():
	case <-time.After(5 * time.Second):
		t.Fatal("single node's registry not ready within 5s")
	}
	t.Logf("New took %v, registry ready after %v", took, time.Since(t0))
	if s.Node().RouteAddr() != nil {
		t.Fatal("a single node has a route listener")
	}
	if after := listeningTCP(t); after != before+1 {
		t.Fatalf("%d TCP listeners before, %d after: a single node must add only its HTTP one", before, after)
	}
	if n := s.Node().HealthyNodes(time.Now()); n != 1 {
		t.Fatalf("%d nodes", n)
	}
	t1 := time.Now()
	s.node.Close()
	s.engine.Close()
	_ = s.ln.Close()
	t.Logf("closed in %v", time.Since(t1))
}

// listeningTCP counts this process's listening TCP sockets.
func listeningTCP(t *testing.T) int {
	mine := map[string]bool{}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc")
	}
	for _, fd := range fds {
		if target, err := os.Readlink("/proc/self/fd/" + fd.Name()); err == nil && strings.HasPrefix(target, "socket:[") {
			mine[strings.TrimSuffix(strings.TrimPrefix(target, "socket:["), "]")] = true
		}
	}
	n := 0
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n")[1:] {
			if fields := strings.Fields(line); len(fields) > 9 && fields[3] == "0A" && mine[fields[9]] {
				n++
			}
		}
	}
	return n
}
