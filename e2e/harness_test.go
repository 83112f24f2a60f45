// Package e2e drives real headless Chromium against a real Podium server.
package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/podium-sfu/podium/internal/config"
	"github.com/podium-sfu/podium/internal/server"
	"github.com/podium-sfu/podium/web"
)

// chromiumPath finds the browser; in CI a missing browser fails instead of skipping.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, p := range []string{os.Getenv("CHROMIUM"), "/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if p != "" {
			if _, err := os.Stat(p); err == nil {
				return p
			}
		}
	}
	if path, err := exec.LookPath("chromium"); err == nil {
		return path
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium not installed (CI must install it: apt-get install -y chromium)")
	}
	t.Skip("chromium not installed")
	return ""
}

func startServer(t *testing.T) *server.Server {
	t.Helper()
	return startServerWith(t, func(*config.Config) {})
}

func startServerWith(t *testing.T, change func(*config.Config)) *server.Server {
	t.Helper()
	if !web.Built() {
		t.Fatal("web client not built: run `make web` (npm ci && npm run build in web/)")
	}
	cfg := config.Default()
	cfg.HTTP = "127.0.0.1:0"
	cfg.UDPPort = 0
	cfg.TCPPort = 0
	cfg.MediaIPs = []string{"127.0.0.1"}
	// Hybrid P2P off: these tests measure what the SFU forwards, also in
	// two-person rooms (simulcast, adaptation, E2EE, Last N), which P2P would
	// take off the SFU after 5 s. The P2P tests (p2p_test.go) turn it on.
	cfg.P2P = false
	change(&cfg)
	var logOut io.Writer = io.Discard
	if os.Getenv("PODIUM_TEST_LOG") != "" {
		logOut = os.Stderr
	}
	srv, err := server.New(cfg, server.Options{Client: web.Files()}, slog.New(slog.NewTextHandler(logOut, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return srv
}

// Browser is one headless browser with one page: Chromium over chromedp, or
// another browser whose page a driver runs (firefox_test.go).
type Browser struct {
	t      *testing.T
	name   string
	ctx    context.Context
	cancel context.CancelFunc
	page   pageDriver // nil for Chromium
}

// pageDriver runs the page of a browser that chromedp does not drive.
type pageDriver interface {
	open(url string) error
	eval(js string) (json.RawMessage, error) // promises awaited, the value as JSON
	addScript(js string) error               // runs in every document loaded from now on
}

// launch starts a browser with fake camera and microphone (extra flags append, e.g. a WAV file).
func launch(t *testing.T, name string, extra ...chromedp.ExecAllocatorOption) *Browser {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("headless", "new"),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("use-fake-device-for-media-stream", "fps=30"),
		chromedp.Flag("use-fake-ui-for-media-stream", true),
		chromedp.Flag("allow-loopback-in-peer-connection", true),
		chromedp.WindowSize(1280, 800),
	}
	opts = append(opts, extra...)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(allocCtx)
	b := &Browser{t: t, name: name, ctx: ctx, cancel: func() { cancelCtx(); cancelAlloc() }}
	if err := chromedp.Do(ctx); err != nil {
		b.cancel()
		t.Fatalf("%s: start chromium: %v", name, err)
	}
	t.Cleanup(b.Close)
	b.addScript(pageScript)
	return b
}

// Close ends the browser as a user closing it would.
func (b *Browser) Close() { b.cancel() }

func (b *Browser) open(url string) {
	b.t.Helper()
	if b.page != nil {
		if err := b.page.open(url); err != nil {
			b.t.Fatalf("%s: open %s: %v", b.name, url, err)
		}
		return
	}
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		b.t.Fatalf("%s: open %s: %v", b.name, url, err)
	}
}

// eval runs JavaScript (awaiting promises) and decodes its JSON-able result into out.
func (b *Browser) eval(js string, out any) error {
	var raw json.RawMessage
	var err error
	if b.page != nil {
		raw, err = b.page.eval(js)
	} else {
		ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
		defer cancel()
		raw, err = chromedp.Run(ctx, chromedp.Evaluate[json.RawMessage](js, chromedp.EvalAwaitPromise))
	}
	if err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(raw, out)
}

// within polls cond every 200 ms until it holds or the timeout passes.
func within(t *testing.T, what string, timeout time.Duration, cond func() (bool, string)) time.Duration {
	t.Helper()
	start := time.Now()
	var detail string
	for time.Since(start) < timeout {
		var ok bool
		if ok, detail = cond(); ok {
			return time.Since(start)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s: not within %v: %s", what, timeout, detail)
	return 0
}

// Inbound is one row of window.podium.stats().inbound.
type Inbound struct {
	ParticipantID   string  `json:"participantId"`
	Kind            string  `json:"kind"`
	PacketsReceived int     `json:"packetsReceived"`
	FramesDecoded   int     `json:"framesDecoded"`
	FrameWidth      int     `json:"frameWidth"`
	FrameHeight     int     `json:"frameHeight"`
	FramesPerSecond float64 `json:"framesPerSecond"`
}

type stats struct {
	Inbound []Inbound `json:"inbound"`
}

func (b *Browser) inbound() ([]Inbound, error) {
	var s stats
	err := b.eval(`window.podium ? window.podium.stats() : {inbound: []}`, &s)
	return s.Inbound, err
}

func (b *Browser) id() string {
	var id *string
	if err := b.eval(`window.podium ? window.podium.id() : null`, &id); err != nil || id == nil {
		return ""
	}
	return *id
}

func (b *Browser) tiles() ([]string, error) {
	var ids []string
	err := b.eval(`Array.from(document.querySelectorAll('.tile[data-participant-id]:not(.local)')).map(e => e.dataset.participantId)`, &ids)
	return ids, err
}

func describe(rows []Inbound) string {
	s := ""
	for _, r := range rows {
		s += fmt.Sprintf("[%s %s pkts=%d frames=%d %dx%d] ", r.ParticipantID, r.Kind, r.PacketsReceived, r.FramesDecoded, r.FrameWidth, r.FrameHeight)
	}
	return s
}
