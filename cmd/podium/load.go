package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/podium-sfu/podium/internal/clip"
	"github.com/podium-sfu/podium/internal/load"
)

const loadUsage = `podium load — synthetic participants against a Podium server

Usage:
  podium load [flags]

Each participant is a Go WebRTC endpoint (ICE, DTLS, SRTP) speaking the signaling
protocol: it publishes pre-encoded Opus with RFC 6464 levels and VP8 (simulcast
q/h/f or one layer), answers keyframe requests and NACKs, follows pause-video and
layers, receives and counts everything, and rejoins if the connection drops (a
server restart). A line per second shows what was sent and received.

Describe the load with --scenario, or with --publishers/--receivers and friends:
  meeting-8    8 participants, Opus + 3-layer simulcast each, showing 7 others at 360p
  fanout-50    1 publisher (Opus + 720p simulcast), 50 receivers showing it at 720p
  audio-10x50  10 audio publishers, 50 audio-only receivers

Examples:
  podium serve --joins-per-ip 0 &           # a server that lets 60 joins come from one address
  podium load --scenario meeting-8 --duration 60s
  podium load --url ws://10.0.0.5:7880/ws --publishers 20 --video single --speech paper --dtx

Flags:
`

func loadCommand(args []string) error {
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(fs.Output(), loadUsage); fs.PrintDefaults() }
	url := fs.String("url", "ws://127.0.0.1:7880/ws", "the server's signaling WebSocket (wss:// for TLS)")
	room := fs.String("room", "load", "room to join")
	token := fs.String("token", "", "access token, for servers with auth-keys (podium token)")
	scenario := fs.String("scenario", "", "a standard scenario: "+strings.Join(load.Scenarios(), ", "))
	publishers := fs.Int("publishers", 8, "participants that publish (without --scenario)")
	receivers := fs.Int("receivers", 0, "receive-only participants (without --scenario)")
	video := fs.String("video", load.VideoSimulcast, "publishers' video: simulcast, single or none")
	clips := fs.String("clips", "", "publishers' video clips, lowest first (default: 360p for single, 180p,360p,720p for simulcast): "+strings.Join([]string{clip.Video180p15, clip.Video180p, clip.Video360p, clip.Video720p}, ", "))
	audio := fs.Bool("audio", true, "publishers send audio")
	view := fs.String("view", "640x360", "how everyone shows the others' videos, WxH (sent as constraints); empty for none")
	speech := fs.String("speech", "", "speaking pattern: paper (one speaker, a new one every 4 s), realistic, none (default: realistic)")
	dtx := fs.Bool("dtx", false, "Opus DTX: silent participants send one packet per 400 ms")
	noNACK := fs.Bool("no-nack", false, "receivers never ask for retransmissions")
	light := fs.Bool("light", false, "receive-only participants count RTP from the clear headers without decrypting it (no keyframe or latency figures; still NACK and send congestion feedback): many more fit on one box")
	audioSlots := fs.Bool("audio-slots", false, "everyone plays audio slots (the server's selected speakers on a few fixed tracks); at the end, print whose audio each received")
	duration := fs.Duration("duration", 0, "stop after this long (0: until interrupted)")
	seed := fs.Uint64("seed", 1, "random seed of the speaking pattern and stream parameters")
	cpuprofile := fs.String("cpuprofile", "", "write the load generator's own CPU profile to this file")
	if err := fs.Parse(args); err != nil {
		return err // -h: exit in main.go ends with status 0
	}
	cfg := load.Config{URL: *url, Room: *room, Token: *token, Speech: *speech, DTX: *dtx, NoNACK: *noNACK, Seed: *seed, AudioSlots: *audioSlots, Light: *light}
	if *scenario != "" {
		sc, err := load.StandardScenario(*scenario)
		if err != nil {
			return err
		}
		cfg.Participants = sc.Participants
		if cfg.Speech == "" {
			cfg.Speech = sc.Speech
		}
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if !set["dtx"] {
			cfg.DTX = sc.DTX
		}
	} else {
		v, err := parseView(*view)
		if err != nil {
			return err
		}
		var names []string
		if *clips != "" {
			names = strings.Split(*clips, ",")
		}
		cfg.Participants = append(load.Group("pub", *publishers, load.ParticipantSpec{Audio: *audio, Video: *video, Clips: names, View: v}),
			load.Group("rcv", *receivers, load.ParticipantSpec{View: v})...)
	}
	if len(cfg.Participants) == 0 {
		return errors.New("no participants")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *duration)
		defer cancel()
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer func() { pprof.StopCPUProfile(); _ = f.Close() }()
	}
	run, err := load.Start(ctx, cfg)
	if err != nil {
		return err
	}
	defer run.Close()
	fmt.Fprintf(os.Stderr, "podium load: %d participants joining %s at %s (Ctrl-C stops)\n", len(cfg.Participants), cfg.Room, cfg.URL)
	first := run.Totals()
	joinsDone := make(chan struct{})
	defer func() { <-joinsDone }()
	go func() { // what the joins cost in signaling, once everyone is in
		defer close(joinsDone)
		if run.WaitJoined(ctx) == nil {
			t := run.Totals()
			fmt.Fprintf(os.Stderr, "podium load: all %d joined after %.1fs; signaling received so far: %s\n",
				len(cfg.Participants), t.At.Sub(run.Started()).Seconds(), t.Signaling.PerJoin(t.Joins))
		}
	}()
	lines := 0
	last := run.Report(ctx, time.Second, func(w load.Window) {
		if lines%20 == 0 {
			fmt.Println(load.Header())
		}
		lines++
		line := w.Line()
		if *duration > 0 {
			line += fmt.Sprintf("  [%3.0f%%]", 100*min(1, w.Elapsed.Seconds()/duration.Seconds()))
		}
		if w.Connected < w.Participants && run.LastError() != "" {
			line += "  last error: " + run.LastError()
		}
		fmt.Println(line)
	})
	fmt.Printf("\nwhole run:\n%s", load.Between(run.Started(), first, last).Summary())
	if *audioSlots {
		fmt.Println("\naudio through slots (packets by speaker):")
		for _, h := range run.SlotAudio() {
			fmt.Println("  " + h.String())
		}
	}
	return nil
}

// parseView reads WxH ("" for none).
func parseView(s string) (load.View, error) {
	if s == "" {
		return load.View{}, nil
	}
	w, h, ok := strings.Cut(s, "x")
	wi, err1 := strconv.Atoi(w)
	hi, err2 := strconv.Atoi(h)
	if !ok || err1 != nil || err2 != nil || wi <= 0 || hi <= 0 {
		return load.View{}, fmt.Errorf("--view %q: want WIDTHxHEIGHT", s)
	}
	return load.View{Width: wi, Height: hi}, nil
}
