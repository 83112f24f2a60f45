// Command podium is the Podium video conferencing server.
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/podium-sfu/podium/internal/config"
	"github.com/podium-sfu/podium/internal/server"
	"github.com/podium-sfu/podium/web"
)

const usage = `podium — self-hosted video conferencing with a selective forwarding unit

Usage:
  podium serve [flags]    run the server (podium serve -h lists every setting)
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	switch os.Args[1] {
	case "serve":
		if err := serve(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "podium:", err)
			os.Exit(1)
		}
	case "-h", "--help", "help":
		fmt.Print(usage)
	default:
		fmt.Fprintf(os.Stderr, "podium: unknown command %q\n\n%s", os.Args[1], usage)
		os.Exit(2)
	}
}

func serve(args []string) error {
	cfg, err := config.Load(args, os.Getenv)
	if err != nil {
		return err
	}
	log := newLogger(cfg, os.Stderr)
	if !web.Built() {
		log.Warn("the web client is not embedded in this binary; build with `make build`")
	}
	srv, err := server.New(cfg, server.Options{Client: web.Files()}, log)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log.Info("podium is running", "url", srv.URL(), "media_udp", cfg.UDPPort)
	fmt.Fprintf(os.Stderr, "\n  Open %s<room>?name=<your name> in two or more browser tabs.\n\n", srv.URL())
	return srv.Serve(ctx)
}

func newLogger(cfg config.Config, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel))
	opts := &slog.HandlerOptions{Level: level}
	if cfg.LogJSON {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
