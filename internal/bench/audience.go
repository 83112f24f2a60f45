package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/podium-sfu/podium/internal/load"
	"github.com/podium-sfu/podium/internal/signal"
)

// AudienceOptions configure `podium bench audience`: one large room — a few
// publishers and a receive-only audience — spread round-robin over the
// bridges of one cluster, each bridge a child process (so its CPU and memory
// are its own), the load generator in this one.
type AudienceOptions struct {
	Bridges    int
	Publishers int // Opus and three-layer simulcast each
	Receivers  int // receive-only
	LastN      int
	AudioSlots int       // the bridges' A; every participant plays slots (0: a track per microphone)
	View       load.View // how everyone shows the others' videos
	Clips      []string  // the publishers' simulcast clips, lowest first (nil: 180p, 360p, 720p)
	Speech     string
	DTX        bool
	Light      bool // receivers count from the clear RTP headers (load.Config.Light)
	// JoinInterval spaces the joins (load.Config.JoinInterval).
	JoinInterval time.Duration
	Warmup       time.Duration
	Duration     time.Duration
	Seed         uint64
	Command      SFUCommand // nil: this executable
	Progress     io.Writer  // a line per second (nil: none)
}

// BridgeFigures are one bridge's figures over the measured window.
type BridgeFigures struct {
	Node                   string
	Publishers, Receivers  int
	UserCPU, SystemCPU     float64 // of one core
	RSS                    uint64
	UDPDrops               uint64  // at the bridge's media socket
	RelayOutKbps           float64 // datagram bytes to the other bridges
	RelayInKbps            float64
	Loss                   Loss   // what its participants missed after repair
	AudioStreams           int    // streams with packets in the window's last second: audio …
	VideoStreams           int    // … and video
	ReceiversOK            int    // receivers getting 1..A audio slots, no other audio, and min(Last N, publishers) videos
	Example                string // what one receiver that did not got
	ShortSeconds, Seconds  int    // receiver-seconds of the window with fewer than Last N videos, and all
	HeardRemote            int    // receivers that heard, through their slots, a speaker on another bridge
	SignalingMessages      uint64
	SignalingBytes         uint64 // received by its participants since the start (their joins included)
	SignalingSteadyPerSecd float64
}

// AudienceResult is a run's figures.
type AudienceResult struct {
	Bridges   []BridgeFigures
	Window    time.Duration
	JoinTime  time.Duration // until every participant had joined
	Summary   string        // the load generator's view of the window
	Signaling string        // what the participants received over signaling since the start, per join and by type
	LoadCPU   float64       // this process (the load generator), of one core
	LoadRSS   uint64
	Reconnect uint64
}

// Audience runs the room and measures it. The result is filled in as far as
// the run got.
func Audience(ctx context.Context, o AudienceOptions) (AudienceResult, error) {
	var res AudienceResult
	if o.Bridges < 1 || o.Publishers < 1 {
		return res, errors.New("bench audience: at least a bridge and a publisher")
	}
	ports, routes, peers := make([]int, o.Bridges), make([]string, o.Bridges), make([]string, o.Bridges)
	relays := make([]int, o.Bridges)
	for i := range o.Bridges {
		var err error
		if ports[i], err = freeUDPPort(); err != nil {
			return res, err
		}
		if relays[i], err = freeUDPPort(); err != nil {
			return res, err
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return res, err
		}
		routes[i], peers[i] = ln.Addr().String(), "nats://"+ln.Addr().String()
		_ = ln.Close()
	}
	sfus := make([]*SFU, o.Bridges)
	defer func() {
		for _, s := range sfus {
			if s != nil {
				s.Close()
			}
		}
	}()
	for i := range o.Bridges {
		args := []string{"--udp-port", strconv.Itoa(ports[i]), "--last-n", strconv.Itoa(o.LastN), "--audio-slots", strconv.Itoa(o.AudioSlots)}
		if o.Bridges > 1 {
			args = append(args, "--region", "r0", "--cluster-listen", routes[i], "--cluster-peers", strings.Join(peers, ","),
				"--relay-port", strconv.Itoa(relays[i]))
		}
		s, err := StartSFU(ctx, o.Command, args...)
		if err != nil {
			return res, fmt.Errorf("bridge %d: %w", i, err)
		}
		sfus[i] = s
	}
	if o.Bridges > 1 {
		for i, s := range sfus {
			if err := s.WaitCluster(o.Bridges); err != nil {
				return res, fmt.Errorf("bridge %d: %w", i, err)
			}
		}
	}
	url := func(b int) string {
		if sfus[b].Node == "" {
			return sfus[b].URL
		}
		return sfus[b].URL + "?bridge=" + sfus[b].Node
	}
	res.Bridges = make([]BridgeFigures, o.Bridges)
	bridgeOf := map[string]int{}
	var specs []load.ParticipantSpec
	add := func(name string, spec load.ParticipantSpec, b int) {
		spec.Name, spec.URL, spec.View = name, url(b), o.View
		specs = append(specs, spec)
		bridgeOf[name] = b
	}
	for i := range o.Publishers {
		b := i % o.Bridges
		add(fmt.Sprintf("pub%02d", i), load.ParticipantSpec{Audio: true, Video: load.VideoSimulcast, Clips: o.Clips}, b)
		res.Bridges[b].Publishers++
	}
	for i := range o.Receivers {
		b := i % o.Bridges
		add(fmt.Sprintf("rcv%04d", i), load.ParticipantSpec{}, b)
		res.Bridges[b].Receivers++
	}
	for i, s := range sfus {
		res.Bridges[i].Node = s.Node
	}
	run, err := load.Start(ctx, load.Config{URL: url(0), Room: "audience", Participants: specs, Speech: o.Speech, DTX: o.DTX,
		Seed: o.Seed, JoinInterval: o.JoinInterval, AudioSlots: o.AudioSlots > 0, Light: o.Light})
	if err != nil {
		return res, err
	}
	defer run.Close()
	jctx, jcancel := context.WithTimeout(ctx, 60*time.Second+time.Duration(len(specs))*max(o.JoinInterval, 40*time.Millisecond)*2)
	joined := make(chan error, 1)
	go func() { joined <- run.WaitJoined(jctx) }()
	err = joinProgress(jctx, run, sfus, joined, o.Progress)
	jcancel()
	if err != nil {
		return res, err
	}
	res.JoinTime = time.Since(run.Started())
	if err := sleepCtx(ctx, o.Warmup); err != nil {
		return res, err
	}

	sample := func() ([]Sample, []uint64, error) {
		out, drops := make([]Sample, len(sfus)), make([]uint64, len(sfus))
		for i, s := range sfus {
			var err error
			if out[i], err = s.Sample(); err != nil {
				return nil, nil, err
			}
			drops[i] = udpDrops(ports[i])
		}
		return out, drops, nil
	}
	s0, d0, err := sample()
	if err != nil {
		return res, err
	}
	self0, _ := ReadProc(os.Getpid())
	t0, rx0, sig0 := run.Totals(), run.Streams(), run.SignalingByURL()
	tally := newStreamTally()
	prev := rx0
	start := time.Now()
	for time.Since(start) < o.Duration {
		before := run.Totals()
		if err := sleepCtx(ctx, min(time.Second, o.Duration-time.Since(start))); err != nil {
			return res, err
		}
		cur := run.Streams()
		tally.add(prev, cur)
		prev = cur
		if o.Progress != nil {
			fmt.Fprintln(o.Progress, load.Between(run.Started(), before, run.Totals()).Line())
		}
	}
	s1, d1, err := sample()
	if err != nil {
		return res, err
	}
	self1, _ := ReadProc(os.Getpid())
	t1, rx1, sig1, heard := run.Totals(), run.Streams(), run.SignalingByURL(), run.SlotAudio()
	res.Window = t1.At.Sub(t0.At)
	w := load.Between(run.Started(), t0, t1)
	res.Summary, res.Reconnect, res.Signaling = w.Summary(), w.Reconnects, t1.Signaling.PerJoin(t1.Joins)
	sec := s1[0].Proc.At.Sub(s0[0].Proc.At).Seconds()
	res.LoadCPU, res.LoadRSS = (self1.CPU()-self0.CPU()).Seconds()/self1.At.Sub(self0.At).Seconds(), self1.RSS

	was := map[[3]string]load.Reception{}
	for _, r := range rx0 {
		was[[3]string{r.Receiver, r.Source, r.Kind}] = r
	}
	for _, r := range rx1 {
		b := was[[3]string{r.Receiver, r.Source, r.Kind}]
		res.Bridges[bridgeOf[r.Receiver]].Loss.add(r.Expected-min(r.Expected, b.Expected), r.Received-min(r.Received, b.Received))
	}
	wantVideo := min(o.LastN, o.Publishers)
	if o.LastN < 0 {
		wantVideo = o.Publishers
	}
	for i := range o.Receivers {
		name := fmt.Sprintf("rcv%04d", i)
		f := &res.Bridges[bridgeOf[name]]
		c := tally.counts[name]
		f.AudioStreams += c.audio
		f.VideoStreams += c.video
		short, secs := tally.short(name, wantVideo)
		f.ShortSeconds += short
		f.Seconds += secs
		if why := tally.judge(name, o.AudioSlots, wantVideo); why == "" {
			f.ReceiversOK++
		} else if f.Example == "" {
			f.Example = why
		}
	}
	for _, h := range heard {
		b, ok := bridgeOf[h.Receiver]
		if !ok || !strings.HasPrefix(h.Receiver, "rcv") {
			continue
		}
		for s := range h.Speakers {
			if sb, ok := bridgeOf[s]; ok && sb != b {
				res.Bridges[b].HeardRemote++
				break
			}
		}
	}
	for i := range sfus {
		f := &res.Bridges[i]
		f.UserCPU = (s1[i].Proc.User - s0[i].Proc.User).Seconds() / sec
		f.SystemCPU = (s1[i].Proc.System - s0[i].Proc.System).Seconds() / sec
		f.RSS = s1[i].Proc.RSS
		f.UDPDrops = d1[i] - d0[i]
		f.RelayOutKbps = float64(s1[i].Stats.RelaySentBytes-s0[i].Stats.RelaySentBytes) * 8 / 1000 / sec
		f.RelayInKbps = float64(s1[i].Stats.RelayReceivedBytes-s0[i].Stats.RelayReceivedBytes) * 8 / 1000 / sec
		u := url(i)
		f.SignalingMessages, f.SignalingBytes = sig0[u].Messages, sig0[u].Bytes
		f.SignalingSteadyPerSecd = float64(sig1[u].Messages-sig0[u].Messages) / res.Window.Seconds()
	}
	for i, f := range res.Bridges {
		if f.Receivers > 0 && f.ReceiversOK < f.Receivers {
			err = errors.Join(err, fmt.Errorf("bridge %d: %d of %d receivers get 1..%d audio slots, no other audio and %d videos (%s)",
				i, f.ReceiversOK, f.Receivers, o.AudioSlots, wantVideo, f.Example))
		}
		if f.Loss.Percent() >= 0.5 {
			err = errors.Join(err, fmt.Errorf("bridge %d: its participants lost %.3f %%", i, f.Loss.Percent()))
		}
	}
	return res, err
}

// joinProgress waits for joined, printing every 5 s how many have joined
// and what the bridges and this process spend meanwhile.
func joinProgress(ctx context.Context, run *load.Run, sfus []*SFU, joined <-chan error, progress io.Writer) error {
	procs := func() []ProcStats {
		out := make([]ProcStats, len(sfus)+1)
		for i, s := range sfus {
			out[i], _ = ReadProc(s.PID)
		}
		out[len(sfus)], _ = ReadProc(os.Getpid())
		return out
	}
	prev := procs()
	tick := time.NewTicker(5 * time.Second)
	defer tick.Stop()
	for {
		select {
		case err := <-joined:
			return err
		case <-ctx.Done():
			return <-joined
		case <-tick.C:
		}
		if progress == nil {
			continue
		}
		cur := procs()
		t := run.Totals()
		line := fmt.Sprintf("joining: %d of %d connected after %.0fs; CPU of a core, bridges", t.Connected, t.Participants, t.At.Sub(run.Started()).Seconds())
		for i := range cur {
			if i == len(sfus) {
				line += ", load generator"
			}
			line += fmt.Sprintf(" %.0f%%", 100*(cur[i].CPU()-prev[i].CPU()).Seconds()/cur[i].At.Sub(prev[i].At).Seconds())
		}
		fmt.Fprintln(progress, line)
		prev = cur
	}
}

// streamTally judges, second by second, what each receiver got: the streams
// that brought it packets in each second of the window.
type streamTally struct {
	counts map[string]streamCount // the last second's
	secs   map[string][]streamCount
}

type streamCount struct{ audio, other, video int } // audio slots, other audio, videos

func newStreamTally() *streamTally {
	return &streamTally{counts: map[string]streamCount{}, secs: map[string][]streamCount{}}
}

// add counts the second between two listings of the streams.
func (t *streamTally) add(before, after []load.Reception) {
	was := map[[3]string]uint64{}
	for _, r := range before {
		was[[3]string{r.Receiver, r.Source, r.Kind}] = r.Packets
	}
	now := map[string]streamCount{}
	for _, r := range after {
		c := now[r.Receiver]
		if r.Packets > was[[3]string{r.Receiver, r.Source, r.Kind}] {
			switch {
			case r.Kind == "video":
				c.video++
			case strings.HasPrefix(r.Source, signal.SlotStreamPrefix):
				c.audio++
			default:
				c.other++
			}
		}
		now[r.Receiver] = c
	}
	for name, c := range now {
		t.secs[name] = append(t.secs[name], c)
	}
	t.counts = now
}

// short counts the seconds in which name got fewer than wantVideo videos,
// and all its seconds.
func (t *streamTally) short(name string, wantVideo int) (short, all int) {
	for _, c := range t.secs[name] {
		if c.video < wantVideo {
			short++
		}
	}
	return short, len(t.secs[name])
}

// judge says what was wrong with what name got ("": nothing): in every
// second 1 to slots audio slots, no other audio and at least wantVideo
// videos; exactly wantVideo in most (a Last N switch overlaps the old video
// and the new for a moment).
func (t *streamTally) judge(name string, slots, wantVideo int) string {
	secs := t.secs[name]
	exact := 0
	for i, c := range secs {
		if c.audio < 1 || c.audio > slots || c.other > 0 || c.video < wantVideo {
			return fmt.Sprintf("%s in second %d of the window: %d audio slots, %d other audio, %d videos", name, i+1, c.audio, c.other, c.video)
		}
		if c.video == wantVideo {
			exact++
		}
	}
	if len(secs) == 0 || 2*exact < len(secs) {
		return fmt.Sprintf("%s got %d videos in only %d of %d seconds", name, wantVideo, exact, len(secs))
	}
	return ""
}

// Table is the figures as a markdown table, a column per bridge.
func (r AudienceResult) Table() string {
	var b strings.Builder
	row := func(name string, f func(BridgeFigures) string) {
		fmt.Fprintf(&b, "| %s |", name)
		for _, x := range r.Bridges {
			fmt.Fprintf(&b, " %s |", f(x))
		}
		b.WriteString("\n")
	}
	row("bridge", func(f BridgeFigures) string { return f.Node })
	b.WriteString("|---|" + strings.Repeat("---|", len(r.Bridges)) + "\n")
	row("participants", func(f BridgeFigures) string {
		return fmt.Sprintf("%d publishers + %d audience", f.Publishers, f.Receivers)
	})
	row("SFU CPU (user + system, of a core)", func(f BridgeFigures) string {
		return fmt.Sprintf("%.1f + %.1f = %.1f %%", 100*f.UserCPU, 100*f.SystemCPU, 100*(f.UserCPU+f.SystemCPU))
	})
	row("SFU RSS", func(f BridgeFigures) string { return fmt.Sprintf("%d MB", f.RSS>>20) })
	row("loss after repair", func(f BridgeFigures) string {
		return fmt.Sprintf("%.3f %% (%d of %d)", f.Loss.Percent(), f.Loss.Missed, f.Loss.Expected)
	})
	row("UDP drops at its socket", func(f BridgeFigures) string { return strconv.FormatUint(f.UDPDrops, 10) })
	row("audience receiving its slots and Last N", func(f BridgeFigures) string { return fmt.Sprintf("%d of %d", f.ReceiversOK, f.Receivers) })
	row("audience seconds with fewer than Last N videos", func(f BridgeFigures) string {
		return fmt.Sprintf("%d of %d", f.ShortSeconds, f.Seconds)
	})
	row("streams received (audio, video)", func(f BridgeFigures) string { return fmt.Sprintf("%d, %d", f.AudioStreams, f.VideoStreams) })
	row("audience that heard a speaker of another bridge", func(f BridgeFigures) string { return fmt.Sprintf("%d of %d", f.HeardRemote, f.Receivers) })
	row("relay out / in", func(f BridgeFigures) string { return fmt.Sprintf("%.0f / %.0f kb/s", f.RelayOutKbps, f.RelayInKbps) })
	row("signaling per join (joins included)", func(f BridgeFigures) string {
		n := float64(max(1, f.Publishers+f.Receivers))
		return fmt.Sprintf("%.1f messages, %.1f kB", float64(f.SignalingMessages)/n, float64(f.SignalingBytes)/1000/n)
	})
	row("signaling, steady", func(f BridgeFigures) string { return fmt.Sprintf("%.0f messages/s", f.SignalingSteadyPerSecd) })
	return b.String()
}

// udpDrops is the drops counted at the UDP sockets bound to port
// (/proc/net/udp; 0 where there is none).
func udpDrops(port int) uint64 {
	var sum uint64
	for _, f := range []string{"/proc/net/udp", "/proc/net/udp6"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		sum += parseUDPDrops(string(b), port)
	}
	return sum
}

func parseUDPDrops(table string, port int) uint64 {
	var sum uint64
	want := fmt.Sprintf(":%04X", port)
	for _, line := range strings.Split(table, "\n")[1:] {
		f := strings.Fields(line)
		if len(f) < 13 || !strings.HasSuffix(f[1], want) {
			continue
		}
		if n, err := strconv.ParseUint(f[len(f)-1], 10, 64); err == nil {
			sum += n
		}
	}
	return sum
}
