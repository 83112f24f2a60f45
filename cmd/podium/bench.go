package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/podium-sfu/podium/internal/bench"
	"github.com/podium-sfu/podium/internal/clip"
	"github.com/podium-sfu/podium/internal/load"
)

const benchUsage = `podium bench — Podium's benchmarks, a server and the load generator in one run

Usage:
  podium bench forward [flags]   forwarding cost on a standard scenario, checked to hold; the
                                 last line of output is key=value figures (cpu_us_per_pkt=…
                                 pkts_per_s=… scenario_held=… …)
  podium bench floor [flags]     the scenario's floor: its egress pattern replayed by a minimal
                                 forwarder (recvmmsg, AES-128-GCM, UDP GSO, sendmmsg); bench
                                 forward measures it too and prints x_floor
  podium bench lastn [flags]     the Last N paper's experiments: CSV, SVG plots, markdown summary
  podium bench cascade [flags]   one conference over several clustered bridges (in this process),
                                 the relay hop lossy: relay traffic against what Last N needs and
                                 Jitsi Octo's all-encodings baseline, loss after repair; checked
  podium bench audience [flags]  one large room (publishers and a receive-only audience, audio slots,
                                 Last N) over clustered bridges, each a child process: per bridge
                                 CPU, RSS, loss, UDP drops, streams, signaling, relay; checked
  podium bench wan [flags]       thesis Table 8.1's RTTs emulated on client↔bridge and bridge↔bridge
                                 paths: audio mouth-to-ear for single bridge, Algorithm 3, ours

The server runs as a child process (this binary, "podium bench sfu") on loopback with
free ports, so its CPU time and memory are measured alone. docs/performance.md and
docs/lastn.md have the results and the commands that made them.
`

func benchCommand(args []string) error {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, benchUsage)
		return errors.New("bench: which one? forward, floor, lastn, cascade, audience or wan")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch args[0] {
	case "forward":
		return benchForward(ctx, args[1:])
	case "lastn":
		return benchLastN(ctx, args[1:])
	case "floor":
		return benchFloor(ctx, args[1:])
	case "cascade":
		return benchCascade(ctx, args[1:])
	case "wan":
		return benchWAN(ctx, args[1:])
	case "audience":
		return benchAudience(ctx, args[1:])
	case "sfu": // the child server; see bench.ChildMain
		return bench.ChildMain(args[1:], os.Stdin, os.Stdout)
	case "floorfwd": // the floor's forwarder child; see bench.FloorChildMain
		return bench.FloorChildMain(os.Stdin, os.Stdout)
	case "-h", "--help", "help":
		fmt.Print(benchUsage)
		return nil
	}
	return fmt.Errorf("bench: unknown benchmark %q (forward, floor, lastn, cascade, audience or wan)", args[0])
}

func benchForward(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench forward", flag.ContinueOnError)
	o := bench.ForwardOptions{}
	fs.StringVar(&o.Scenario, "scenario", load.Meeting8, "standard scenario: "+strings.Join(load.Scenarios(), ", "))
	fs.DurationVar(&o.Duration, "duration", 50*time.Second, "measured window")
	fs.DurationVar(&o.Warmup, "warmup", 10*time.Second, "time after every participant joined, before measuring")
	fs.StringVar(&o.CPUProfile, "cpuprofile", "", "write the server's CPU profile of the measured window to this file")
	fs.StringVar(&o.Trace, "trace", "", "write a Go execution trace of the server over the measured window to this file")
	fs.StringVar(&o.HeapProfile, "heapprofile", "", "write the server's heap profile at the end of the window to this file")
	quiet := fs.Bool("quiet", false, "no per-second lines")
	require := fs.Bool("require-scenario", true, "exit non-zero when the scenario did not hold (a receiver off its expected encoding "+
		"more than 10 % of the window, forwarded rates off nominal by more than 15 %); false only for smoke runs too short to settle")
	fs.DurationVar(&o.FloorDuration, "floor-duration", 20*time.Second, "measured window of the scenario's floor, half of it run before the SFU and half after, "+
		"with the same kind of receivers (0: no floor, no x_floor)")
	saturate := fs.Int("saturate", 0, "saturation run: raise the load one more copy of the scenario (in a room of its own) per step, "+
		"up to this many, until receivers lose ≥ 0.5 % or the scenario stops holding; report the highest packets/s held and its x_floor")
	saturateFrom := fs.Int("saturate-from", 1, "the saturation run's first load, in copies of the scenario")
	fs.Uint64Var(&o.Seed, "seed", 1, "random seed")
	fs.IntVar(&o.SFUProcs, "sfu-procs", 0, "the server's GOMAXPROCS, fixed (0: sized to the work, as podium serve does: internal/procs); the load generator keeps all cores")
	if err := fs.Parse(args); err != nil {
		return err // -h: exit in main.go ends with status 0
	}
	if !*quiet {
		o.Progress = os.Stderr
	}
	// The server child may run elsewhere: give it absolute paths.
	for _, p := range []*string{&o.CPUProfile, &o.HeapProfile, &o.Trace} {
		if *p != "" {
			if abs, err := filepath.Abs(*p); err == nil {
				*p = abs
			}
		}
	}
	if *saturate > 0 {
		return benchSaturate(ctx, o, *saturateFrom, *saturate)
	}
	res, err := bench.Forward(ctx, o)
	var held *bench.ScenarioError
	if err != nil && !errors.As(err, &held) {
		return err
	}
	// The figures of a scenario that did not hold are printed too, then the
	// error (which receiver got what) makes the exit status non-zero.
	fmt.Print(res.Summary())
	fmt.Println(res.Line())
	if held != nil && !*require {
		fmt.Fprintln(os.Stderr, "podium bench forward:", err)
		return nil
	}
	return err
}

func benchSaturate(ctx context.Context, o bench.ForwardOptions, first, maxCopies int) error {
	steps, err := bench.Saturate(ctx, o, first, maxCopies, func(s bench.SaturationStep) {
		state := "held"
		if !s.Held {
			state = "NOT held: " + s.Why
		}
		fmt.Printf("copies=%d %s\n  %s\n", s.Copies, state, s.Result.Line())
	})
	if len(steps) > 0 {
		fmt.Println(bench.SaturationLine(o.Scenario, steps))
	}
	return err
}

func benchFloor(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench floor", flag.ContinueOnError)
	o := bench.FloorOptions{}
	fs.StringVar(&o.Scenario, "scenario", load.Meeting8, "standard scenario: "+strings.Join(load.Scenarios(), ", "))
	fs.DurationVar(&o.Duration, "duration", 20*time.Second, "measured window")
	fs.DurationVar(&o.Warmup, "warmup", 2*time.Second, "time before measuring")
	fs.IntVar(&o.Procs, "procs", 1, "the forwarder's GOMAXPROCS")
	fs.Uint64Var(&o.Seed, "seed", 1, "random seed")
	if err := fs.Parse(args); err != nil {
		return err // -h: exit in main.go ends with status 0
	}
	o.Progress = os.Stderr
	res, err := bench.Floor(ctx, o)
	if err != nil {
		return err
	}
	fmt.Print(res.Summary())
	fmt.Printf("scenario=%s duration_s=%.0f %s\n", res.Scenario, res.Window.Seconds(), res.Line())
	return nil
}

func benchLastN(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench lastn", flag.ContinueOnError)
	o := bench.DefaultLastN()
	ks := fs.String("k", joinInts(o.Ks), "conference sizes (load endpoints; one receive-only endpoint joins too)")
	ns := fs.String("n", joinInts(o.Ns), "Last N values for the K sweep; -1 is the full star")
	fs.IntVar(&o.PausingK, "pausing-k", o.PausingK, "K of the video pausing experiment")
	pns := fs.String("pausing-n", joinInts(o.PausingNs), "N values of the video pausing experiment")
	fs.DurationVar(&o.Warmup, "warmup", o.Warmup, "settling time after each change of N")
	fs.DurationVar(&o.Duration, "duration", o.Duration, "measured window of each configuration")
	fs.StringVar(&o.Clip, "clip", o.Clip, "endpoints' video clip: "+strings.Join([]string{clip.Video180p15, clip.Video180p, clip.Video360p}, ", "))
	fs.BoolVar(&o.DTX, "dtx", o.DTX, "Opus DTX on silent endpoints")
	fs.StringVar(&o.OutDir, "out", "lastn-results", "directory for lastn.csv, the SVG plots and lastn-summary.md")
	fs.Uint64Var(&o.Seed, "seed", 1, "random seed")
	if err := fs.Parse(args); err != nil {
		return err // -h: exit in main.go ends with status 0
	}
	var err error
	if o.Ks, err = parseInts(*ks); err != nil {
		return fmt.Errorf("--k: %w", err)
	}
	if o.Ns, err = parseInts(*ns); err != nil {
		return fmt.Errorf("--n: %w", err)
	}
	if o.PausingNs, err = parseInts(*pns); err != nil {
		return fmt.Errorf("--pausing-n: %w", err)
	}
	o.Progress = os.Stderr
	points, err := bench.LastN(ctx, o)
	if err != nil {
		return err
	}
	fmt.Print(bench.LastNSummary(o, points))
	fmt.Fprintf(os.Stderr, "wrote %s/{lastn.csv,lastn-outbound.svg,lastn-pausing-bitrate.svg,lastn-pausing-cpu.svg,lastn-summary.md}\n", o.OutDir)
	return nil
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, errors.New("empty list")
	}
	return out, nil
}

func joinInts(vs []int) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = strconv.Itoa(v)
	}
	return strings.Join(s, ",")
}

func benchCascade(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench cascade", flag.ContinueOnError)
	o := bench.CascadeOptions{}
	fs.IntVar(&o.Bridges, "bridges", 3, "bridges (clustered nodes in this process)")
	fs.IntVar(&o.Participants, "participants", 30, "synthetic participants (Opus and 3-layer simulcast, in a grid), round-robin over the bridges")
	fs.IntVar(&o.LastN, "last-n", 5, "the bridges' Last N")
	fs.IntVar(&o.TileHeight, "tile-height", 360, "height of the 16:9 grid tiles receivers show: 360 takes the middle simulcast encoding, 180 the lowest")
	fs.BoolVar(&o.DTX, "dtx", false, "Opus DTX: silent participants send almost no audio")
	fs.Float64Var(&o.Loss, "loss", 0.02, "random loss on every relay hop during the window, 0..1")
	fs.DurationVar(&o.Warmup, "warmup", 10*time.Second, "time after every participant joined, before measuring")
	fs.DurationVar(&o.Duration, "duration", 30*time.Second, "measured window")
	fs.Float64Var(&o.Margin, "margin", 0.15, "fail when the relay traffic exceeds what Last N needs by more than this share")
	fs.Uint64Var(&o.Seed, "seed", 1, "random seed")
	quiet := fs.Bool("quiet", false, "no per-second lines")
	if err := fs.Parse(args); err != nil {
		return err // -h: exit in main.go ends with status 0
	}
	if !*quiet {
		o.Progress = os.Stderr
	}
	res, err := bench.Cascade(ctx, o)
	if res.Window > 0 {
		fmt.Println(res.Line())
	}
	return err
}

func benchAudience(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench audience", flag.ContinueOnError)
	o := bench.AudienceOptions{}
	fs.IntVar(&o.Bridges, "bridges", 3, "bridges (clustered child processes); participants go round-robin over them")
	fs.IntVar(&o.Publishers, "publishers", 10, "participants publishing Opus and 3-layer simulcast")
	fs.IntVar(&o.Receivers, "receivers", 990, "receive-only participants (the audience)")
	fs.IntVar(&o.LastN, "last-n", 1, "the bridges' Last N")
	fs.IntVar(&o.AudioSlots, "audio-slots", 3, "the bridges' audio slots A; everyone plays them (0: a track per microphone)")
	view := fs.String("view", "320x180", "how everyone shows the others' videos, WxH")
	clips := fs.String("clips", clip.Video180p15+","+clip.Video360p+","+clip.Video720p, "publishers' simulcast clips, lowest first")
	fs.StringVar(&o.Speech, "speech", load.SpeechPaper, "speaking pattern: paper, realistic, none")
	fs.BoolVar(&o.DTX, "dtx", true, "Opus DTX: silent participants send one packet per 400 ms")
	fs.BoolVar(&o.Light, "light", true, "the audience counts RTP from the clear headers without decrypting (podium load --light)")
	fs.DurationVar(&o.JoinInterval, "join-interval", 40*time.Millisecond, "time between joins")
	fs.DurationVar(&o.Warmup, "warmup", 20*time.Second, "time after every participant joined, before measuring")
	fs.DurationVar(&o.Duration, "duration", 60*time.Second, "measured window")
	fs.Uint64Var(&o.Seed, "seed", 1, "random seed")
	quiet := fs.Bool("quiet", false, "no per-second lines")
	if err := fs.Parse(args); err != nil {
		return err // -h: exit in main.go ends with status 0
	}
	v, err := parseView(*view)
	if err != nil {
		return err
	}
	o.View, o.Clips = v, strings.Split(*clips, ",")
	if !*quiet {
		o.Progress = os.Stderr
		fmt.Fprintln(os.Stderr, load.Header())
	}
	res, err := bench.Audience(ctx, o)
	if res.Window > 0 {
		fmt.Printf("all joined after %.1fs; window %.0fs; load generator %.1f %% of a core, RSS %d MB; %d reconnects in the window\n\n",
			res.JoinTime.Seconds(), res.Window.Seconds(), 100*res.LoadCPU, res.LoadRSS>>20, res.Reconnect)
		fmt.Print(res.Table())
		fmt.Printf("\n%ssignaling since the start: %s\n", res.Summary, res.Signaling)
	}
	return err
}

func benchWAN(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("bench wan", flag.ContinueOnError)
	o := bench.WANOptions{Rooms: bench.WANRooms}
	strategies := fs.String("strategies", "single,nearest,ours", "bridge selections to compare: single (the first participant's region), "+
		"nearest (thesis Algorithm 3), ours (Algorithm 3 with the RTT rule)")
	fs.DurationVar(&o.Warmup, "warmup", 3*time.Second, "time after every participant joined, before measuring")
	fs.DurationVar(&o.Duration, "duration", 10*time.Second, "measured window per strategy")
	fs.Float64Var(&o.Tolerance, "tolerance", 10, "ms of mean mouth-to-ear ours may be above single-bridge in a room where it placed differently (and must be below it in one)")
	fs.Uint64Var(&o.Seed, "seed", 1, "random seed")
	svg := fs.String("svg", "", "also write the end-to-end RTT by room and strategy as an SVG bar chart to this file, captioned with this command")
	if err := fs.Parse(args); err != nil {
		return err // -h: exit in main.go ends with status 0
	}
	o.Strategies = strings.Split(*strategies, ",")
	o.Progress = os.Stderr
	rows, err := bench.WAN(ctx, o)
	if *svg != "" && len(rows) > 0 {
		chart := bench.WANChart(rows, strings.Join(append([]string{"podium", "bench", "wan"}, args...), " "))
		if werr := os.WriteFile(*svg, chart.SVG(), 0o644); werr != nil {
			return errors.Join(err, werr)
		}
	}
	fmt.Println("| room | users (join order) | strategy | bridges | model mouth-to-ear ms | measured mean ms | p50 ms | end-to-end RTT ms |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	for _, r := range rows {
		fmt.Printf("| %s | %s | %s | %s | %.0f | %.1f | %.1f | %.0f |\n", r.Room, strings.Join(r.Users, " "), r.Strategy,
			strings.Join(r.Bridges, " "), r.ModelMs, r.MeanMs, r.P50Ms, 2*r.MeanMs)
	}
	for _, r := range rows {
		fmt.Println(r.Line())
	}
	return err
}
