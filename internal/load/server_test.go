package load

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/podium-sfu/podium/internal/config"
	"github.com/podium-sfu/podium/internal/server"
)

// startServer runs a Podium server on loopback with free ports until the test
// ends, and returns its signaling URL.
func startServer(t *testing.T, change func(*config.Config)) (wsURL string, stop func()) {
	t.Helper()
	cfg := config.Default()
	cfg.HTTP = "127.0.0.1:0"
	cfg.UDPPort, cfg.TCPPort = 0, 0
	cfg.MediaIPs = []string{"127.0.0.1"}
	if change != nil {
		change(&cfg)
	}
	var logOut io.Writer = io.Discard
	if os.Getenv("PODIUM_TEST_LOG") != "" {
		logOut = os.Stderr
	}
	srv, err := server.New(cfg, server.Options{Client: fstest.MapFS{"index.html": {Data: []byte("podium")}}},
		slog.New(slog.NewTextHandler(logOut, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	}
	t.Cleanup(stop)
	return "ws" + strings.TrimPrefix(srv.URL(), "http") + "ws", stop
}
