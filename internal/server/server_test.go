package server

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/podium-sfu/podium/internal/client"
	"github.com/podium-sfu/podium/internal/config"
)

// startServer runs a server on loopback with free ports until the test ends.
func startServer(t *testing.T, opts Options) *Server {
	t.Helper()
	return startServerWith(t, opts, func(*config.Config) {})
}

// startServerWith is startServer with configuration changes.
func startServerWith(t *testing.T, opts Options, change func(*config.Config)) *Server {
	t.Helper()
	cfg := config.Default()
	cfg.HTTP = "127.0.0.1:0"
	cfg.UDPPort = 0
	cfg.TCPPort = 0
	cfg.MediaIPs = []string{"127.0.0.1"}
	change(&cfg)
	if opts.CPU == nil {
		// This process also runs the test's clients (ten of them under
		// -race on a busy 2-core box): its CPU is not the server's, and
		// overload shedding read from it once refused a test's first join.
		// Overload tests inject their own reading.
		opts.CPU = func(time.Time) float64 { return 0.1 }
	}
	if opts.Client == nil {
		opts.Client = fstest.MapFS{"index.html": {Data: []byte("<!doctype html><title>podium</title>")}}
	}
	var logOut io.Writer = io.Discard
	if os.Getenv("PODIUM_TEST_LOG") != "" {
		logOut = os.Stderr
	}
	srv, err := New(cfg, opts, slog.New(slog.NewTextHandler(logOut, &slog.HandlerOptions{Level: slog.LevelDebug})))
	_ = logOut
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return srv
}

func discardLog() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func wsURL(s *Server) string {
	return "ws" + strings.TrimPrefix(s.URL(), "http") + "ws"
}

func dial(t *testing.T, s *Server, room, name string, publish bool) *client.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, client.Options{URL: wsURL(s), Room: room, Name: name, Publish: publish})
	if err != nil {
		t.Fatalf("%s joins %s: %v", name, room, err)
	}
	t.Cleanup(c.Close)
	return c
}

func waitFor(t *testing.T, c *client.Client, what string, timeout time.Duration, cond func(*client.State) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := c.Wait(ctx, cond); err != nil {
		st := c.Snapshot()
		t.Fatalf("%s: %s: %v (participants %v, tracks %d, errors %v, closed %v)", st.ID, what, err, st.Participants, len(st.Tracks), st.Errors, st.Closed)
	}
}

// receiving reports whether c gets audio and video from each of ids, with video
// having started at a keyframe, and packets arriving in the last second.
func receiving(ids ...string) func(*client.State) bool {
	return func(s *client.State) bool {
		for _, id := range ids {
			for _, kind := range []string{"audio", "video"} {
				tr := s.Tracks[kind+"-"+id]
				if tr == nil || tr.Packets < 20 || time.Since(tr.LastSeen) > time.Second {
					return false
				}
				if kind == "video" && tr.Keyframes == 0 {
					return false
				}
			}
		}
		return true
	}
}
