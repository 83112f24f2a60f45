// Command netem relays UDP between clients and a target through an
// emulated path (internal/netem): delay, jitter, loss, a rate limit and its
// queue, the same each way unless -only picks one direction.
//
//	go run ./tools/netem -listen 127.0.0.1:9000 -target 127.0.0.1:7882 \
//	    -delay 100ms -jitter 30ms -loss 0.02 -rate 3mbit -queue 100ms
package main

import (
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/podium-sfu/podium/internal/netem"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "netem:", err)
		os.Exit(2)
	}
}

func run(args []string) error {
	cfg, err := parse(args)
	if err != nil {
		return err
	}
	r, err := netem.StartRelay(cfg)
	if err != nil {
		return err
	}
	fmt.Printf("relaying %s → %s (up %+v, down %+v)\n", r.Addr(), cfg.Target, cfg.Up, cfg.Down)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			fmt.Printf("%+v\n", r.Stats())
		case <-sig:
			fmt.Printf("%+v\n", r.Stats())
			return r.Close()
		}
	}
}

func parse(args []string) (netem.RelayConfig, error) {
	fs := flag.NewFlagSet("netem", flag.ContinueOnError)
	var (
		cfg      netem.RelayConfig
		link     netem.Config
		rate     string
		allow    string
		only     string
		burstLen float64
	)
	fs.StringVar(&cfg.Listen, "listen", "127.0.0.1:9000", "address:port clients send to")
	fs.StringVar(&cfg.Target, "target", "", "address:port to relay to (required)")
	fs.DurationVar(&link.Delay, "delay", 0, "one-way delay added to every datagram")
	fs.DurationVar(&link.Jitter, "jitter", 0, "further delay, uniform in [0, jitter); order kept unless -reorder")
	fs.BoolVar(&link.Reorder, "reorder", false, "let jitter reorder datagrams")
	fs.Float64Var(&link.Loss, "loss", 0, "probability of losing a datagram, in [0, 1)")
	fs.Float64Var(&burstLen, "burst", 0, "mean loss burst in datagrams (Gilbert-Elliott); <= 1: independent losses")
	fs.StringVar(&rate, "rate", "", "rate limit, e.g. 3mbit, 500kbit, 64000 (bits/s); empty: none")
	fs.DurationVar(&link.QueueTime, "queue", 100*time.Millisecond, "drop-tail queue of the rate limit, as the longest wait")
	fs.IntVar(&link.QueueBytes, "queue-bytes", 0, "drop-tail queue of the rate limit in bytes (0: only -queue bounds it)")
	fs.Int64Var(&cfg.Seed, "seed", 1, "seed of the random draws (jitter, loss)")
	fs.StringVar(&allow, "allow", "", "only clients within this prefix, e.g. 10.0.0.2/32 (default: any)")
	fs.StringVar(&only, "only", "", "emulate one direction only: up (clients → target) or down (target → clients)")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if cfg.Target == "" {
		return cfg, fmt.Errorf("-target is required")
	}
	link.BurstLen = burstLen
	if rate != "" {
		bps, err := ParseRate(rate)
		if err != nil {
			return cfg, err
		}
		link.Rate = bps
	}
	if allow != "" {
		p, err := netip.ParsePrefix(allow)
		if err != nil {
			return cfg, fmt.Errorf("-allow: %w", err)
		}
		cfg.Allow = p
	}
	switch only {
	case "":
		cfg.Up, cfg.Down = link, link
	case "up":
		cfg.Up = link
	case "down":
		cfg.Down = link
	default:
		return cfg, fmt.Errorf("-only %q: want up or down", only)
	}
	return cfg, nil
}

// ParseRate reads a rate as tc writes it: bits per second, optionally with a
// kbit, mbit or gbit suffix (decimal multiples), e.g. 3mbit or 2.5mbit.
func ParseRate(s string) (int, error) {
	num, mult := strings.ToLower(strings.TrimSpace(s)), 1.0
	for _, u := range []struct {
		suffix string
		mult   float64
	}{{"kbit", 1e3}, {"mbit", 1e6}, {"gbit", 1e9}, {"bit", 1}} {
		if strings.HasSuffix(num, u.suffix) {
			num, mult = strings.TrimSuffix(num, u.suffix), u.mult
			break
		}
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v <= 0 || v*mult > 1e12 {
		return 0, fmt.Errorf("rate %q: want a positive number of bits/s, e.g. 3mbit, 500kbit or 64000", s)
	}
	return int(v * mult), nil
}
