package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/podium-sfu/podium/internal/config"
	"github.com/podium-sfu/podium/internal/memtrim"
	"github.com/podium-sfu/podium/internal/procs"
	"github.com/podium-sfu/podium/internal/server"
	"github.com/podium-sfu/podium/web"
)

// env is what serve needs from the process, so tests can run it in-process.
type env struct {
	getenv  func(string) string
	stdout  io.Writer
	stderr  io.Writer
	signals <-chan os.Signal // SIGINT/SIGTERM; the first drains, the second stops at once
	ready   func(*server.Server)
}

func processEnv() env {
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	return env{getenv: os.Getenv, stdout: os.Stdout, stderr: os.Stderr, signals: sig}
}

// serve is `podium serve`: it returns nil after a graceful shutdown.
func serve(args []string) error { return runServe(args, processEnv()) }

func runServe(args []string, e env) error {
	cfg, sw, err := config.LoadSwitches(args, e.getenv)
	if sw.PrintConfig {
		if perr := cfg.Print(e.stdout); perr != nil {
			return perr
		}
		return err
	}
	if err != nil {
		return err
	}
	log := newLogger(cfg, e.stderr)
	logOpenFiles(log)
	if !web.Built() {
		log.Warn("the web client is not embedded in this binary; build with `make build`")
	}
	if cfg.DevMode() {
		warnDevMode(cfg, log, e.stderr)
	} else {
		log.Info("access control on: joining needs a token", "keys", len(cfg.AuthKeys))
	}
	srv, err := server.New(cfg, server.Options{Client: web.Files()}, log)
	if err != nil {
		return err
	}
	serveCtx, stopServing := context.WithCancel(context.Background())
	defer stopServing()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(serveCtx) }()
	log.Info("podium is running", "url", srv.URL(), "media_udp", cfg.UDPPort)
	defer memtrim.Start(log)()
	defer procs.Start(log)()
	fmt.Fprintf(e.stderr, "\n  Open %s<room>?name=<your name> in two or more browser tabs.\n\n", srv.URL())
	if e.ready != nil {
		e.ready(srv)
	}
	select {
	case err := <-done:
		return err
	case sig := <-e.signals:
		log.Info("shutting down: draining (a second signal stops at once)", "signal", sig.String(), "drain_timeout", cfg.DrainTimeout)
	}
	// A second signal cuts the drain short.
	drainCtx, cutShort := context.WithCancel(context.Background())
	go func() {
		select {
		case <-e.signals:
			cutShort()
		case <-drainCtx.Done():
		}
	}()
	srv.Drain(drainCtx, cfg.DrainTimeout)
	cutShort()
	stopServing()
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	log.Info("stopped")
	return nil
}

// warnDevMode says loudly that anyone can join.
func warnDevMode(cfg config.Config, log *slog.Logger, w io.Writer) {
	why := "no auth-keys are configured"
	if cfg.Dev {
		why = "dev is set"
	}
	bar := strings.Repeat("!", 78)
	fmt.Fprintf(w, "\n%s\n  DEV MODE: access control is OFF (%s).\n"+
		"  Anyone who can reach %s can join any room, publish, and use the admin API.\n"+
		"  For anything but local development, configure auth-keys and hand out tokens\n"+
		"  made with `podium token` (README, \"Access control\").\n%s\n\n", bar, why, cfg.HTTP, bar)
	log.Warn("dev mode: rooms are open to anyone, no token needed", "http", cfg.HTTP, "reason", why)
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
