package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/podium-sfu/podium/internal/load"
)

// ForwardOptions configure `podium bench forward`.
type ForwardOptions struct {
	Scenario string        // a load.StandardScenario name
	Warmup   time.Duration // after every participant joined, before measuring
	Duration time.Duration // the measured window
	// CPUProfile, when set, receives the server's CPU profile of the measured window.
	CPUProfile string
	// Trace, when set, receives a Go execution trace of the server over the
	// measured window (tools/perf/timers.sh reads what woke its goroutines).
	Trace string
	// HeapProfile, when set, receives the server's heap profile at the window's end
	// (live memory and, with -sample_index=alloc_objects, where allocations happen),
	// and HeapProfile+".start" the one at its start: with pprof's -base, the
	// window's allocations alone.
	HeapProfile string
	Command     SFUCommand // nil: this executable's `bench sfu`
	Progress    io.Writer  // a line per second while measuring (nil: none)
	Seed        uint64
	// Custom, when set, is run instead of the standard scenario named Scenario
	// (tests run small ones).
	Custom *load.Scenario
	// NoFeedback makes the receivers send no congestion control feedback
	// (load.Config.NoFeedback): the scenario then cannot hold.
	NoFeedback bool
	// FloorDuration, when positive, measures the scenario's floor (Floor)
	// for this long, half before the SFU runs and half after, each after a
	// short warm-up, with the same kind of receivers; the result then has
	// x_floor.
	FloorDuration time.Duration
	FloorCommand  FloorCommand // nil: this executable's `bench floorfwd`
	// SFUProcs, when positive, fixes the server child's GOMAXPROCS (the cores
	// its Go code may run on at once); else internal/procs sizes it to the
	// work, as in podium serve. The load generator keeps the machine's.
	SFUProcs int
}

// ForwardResult are the figures of one forwarding benchmark.
type ForwardResult struct {
	Scenario     string
	Participants int
	Window       time.Duration

	ForwardedPackets, ForwardedBytes uint64
	ReceivedPackets                  uint64
	PacketsPerS, MbitPerS            float64

	// SFU process CPU per forwarded packet, in microseconds: user+system, user
	// and system (from /proc/PID/stat, 10 ms ticks).
	CPUMicros, UserMicros, SysMicros float64
	CPUPercent                       float64 // of one core
	// StealPercent is the share of the machine's busy CPU time the
	// hypervisor gave other guests during the window (HostCPU): CPU per
	// packet is comparable between windows of alike steal only.
	StealPercent float64

	LatencyP50, LatencyP99, LatencyMax time.Duration // socket read → send, sampled
	LatencySamples                     uint64
	ForwardP50, ForwardP99             time.Duration // decrypted packet read → send: the forwarding path
	AllocsPerPacket                    float64       // whole process
	// The own data plane's sends: datagrams per sendmmsg, and per message
	// (above 1: GSO trains).
	DatagramsPerCall, DatagramsPerMessage float64
	GCs                                   uint32
	GCPauseMax                            time.Duration
	GCStopMax                             time.Duration // of GCPauseMax's kind: stopping the world
	// ProcsStart and ProcsEnd are the server's GOMAXPROCS at the window's
	// ends: internal/procs sizes it to the work unless --sfu-procs fixes it.
	ProcsStart, ProcsEnd int
	RSS, PeakRSS         uint64
	AnonRSS, FileRSS     uint64  // RSS's parts at the window's end (ProcStats)
	RSSPerParticipant    float64 // bytes

	LoadCPUPercent float64 // the load generator (this process), of one core
	// LoadGCs and LoadGCPauseMax are the load generator's collections in the
	// window and the longest pause among them: another Go process on the same
	// box at the same time, the baseline for the server's GC pause.
	LoadGCs        uint32
	LoadGCPauseMax time.Duration
	Load           load.Window // what the participants saw

	// Nominal is what the SFU forwards when the scenario holds; Verdict says
	// whether it held (each receiver on the expected encoding of each source,
	// forwarded rates near nominal).
	Nominal Rates
	Verdict Verdict

	// Floor is the scenario's floor measured in the same run (zero when not
	// measured): half of it before the SFU's window, half after, merged
	// (FloorBefore and FloorAfter are the halves' CPU per packet, µs); XFloor
	// is CPUMicros over the floor's.
	Floor                   FloorResult
	FloorBefore, FloorAfter float64
	XFloor                  float64
}

// Line is the result as one stable, parseable line of key=value pairs.
func (r ForwardResult) Line() string {
	return fmt.Sprintf("scenario=%s participants=%d duration_s=%.0f cpu_us_per_pkt=%.2f user_us_per_pkt=%.2f sys_us_per_pkt=%.2f "+
		"pkts_per_s=%.0f mbit_per_s=%.2f p50_latency_us=%.0f p99_latency_us=%.0f allocs_per_pkt=%.3f gc_pause_max_us=%.0f gc_stop_max_us=%.0f gcs=%d "+
		"rss_mb=%.1f rss_per_participant_mb=%.2f sfu_cpu_pct=%.1f load_cpu_pct=%.1f rx_loss_pct=%.3f audio_e2e_p99_us=%.0f "+
		"p50_forward_latency_us=%.0f p99_forward_latency_us=%.0f datagrams_per_send=%.1f datagrams_per_message=%.2f "+
		"nominal_pkts_per_s=%.0f nominal_mbit_per_s=%.2f streams_held=%d/%d worst_stream_pct=%.1f scenario_held=%t",
		r.Scenario, r.Participants, r.Window.Seconds(), r.CPUMicros, r.UserMicros, r.SysMicros,
		r.PacketsPerS, r.MbitPerS, us(r.LatencyP50), us(r.LatencyP99), r.AllocsPerPacket, us(r.GCPauseMax), us(r.GCStopMax), r.GCs,
		float64(r.RSS)/(1<<20), r.RSSPerParticipant/(1<<20), r.CPUPercent, r.LoadCPUPercent, r.Load.LossPercent, us(r.Load.AudioLatencyP99),
		us(r.ForwardP50), us(r.ForwardP99), r.DatagramsPerCall, r.DatagramsPerMessage, r.Nominal.PacketsPerS, r.Nominal.BitsPerS/1e6,
		r.Verdict.Held, r.Verdict.Streams, r.Verdict.WorstPct, r.Verdict.OK()) +
		fmt.Sprintf(" x_floor=%.2f %s floor_before_us_per_pkt=%.2f floor_after_us_per_pkt=%.2f steal_pct=%.1f load_gcs=%d load_gc_pause_max_us=%.0f sfu_procs_start=%d sfu_procs_end=%d",
			r.XFloor, r.Floor.Line(), r.FloorBefore, r.FloorAfter, r.StealPercent, r.LoadGCs, us(r.LoadGCPauseMax), r.ProcsStart, r.ProcsEnd) +
		fmt.Sprintf(" rss_anon_mb=%.1f rss_file_mb=%.1f", float64(r.AnonRSS)/(1<<20), float64(r.FileRSS)/(1<<20))
}

// stealSkew is the difference in host steal (percentage points) beyond which
// the SFU's and the floor's windows ran on different machines, in effect.
const stealSkew = 3

// StealSkewed reports whether the SFU's and the floor's windows saw host
// steal too different for x_floor to compare them.
func (r ForwardResult) StealSkewed() bool {
	return r.Floor.Forwarded > 0 && math.Abs(r.StealPercent-r.Floor.StealPercent) > stealSkew
}

func us(d time.Duration) float64 { return float64(d) / 1e3 }

// Summary describes the result for people.
func (r ForwardResult) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "scenario             %s, %d participants, %.0f s measured\n", r.Scenario, r.Participants, r.Window.Seconds())
	fmt.Fprintf(&b, "forwarded            %.0f packets/s, %.2f Mbit/s (RTP), from %.0f received packets/s\n",
		r.PacketsPerS, r.MbitPerS, float64(r.ReceivedPackets)/r.Window.Seconds())
	fmt.Fprintf(&b, "nominal              %.0f packets/s, %.2f Mbit/s when the scenario holds\n", r.Nominal.PacketsPerS, r.Nominal.BitsPerS/1e6)
	held := "held"
	if !r.Verdict.OK() {
		held = "DID NOT HOLD"
	}
	fmt.Fprintf(&b, "scenario             %s: %d of %d streams on the expected encoding ≥ %.0f %% of the window (worst %.1f %%)\n",
		held, r.Verdict.Held, r.Verdict.Streams, 100*MinHeldFraction, r.Verdict.WorstPct)
	fmt.Fprintf(&b, "SFU CPU              %.2f µs per forwarded packet (user %.2f, system %.2f); %.1f %% of a core\n",
		r.CPUMicros, r.UserMicros, r.SysMicros, r.CPUPercent)
	fmt.Fprintf(&b, "SFU processors       GOMAXPROCS %d at the window's start, %d at its end\n", r.ProcsStart, r.ProcsEnd)
	fmt.Fprintf(&b, "host steal           %.1f %% of the machine's busy CPU time went to other guests\n", r.StealPercent)
	fmt.Fprintf(&b, "SFU-added latency    p50 %.0f µs, p99 %.0f µs, max ≤ %.0f µs (%d samples, UDP socket read → send)\n",
		us(r.LatencyP50), us(r.LatencyP99), us(r.LatencyMax), r.LatencySamples)
	fmt.Fprintf(&b, "  forwarding path    p50 %.0f µs, p99 %.0f µs (decrypted packet read → send; the rest is pion's receive path)\n",
		us(r.ForwardP50), us(r.ForwardP99))
	fmt.Fprintf(&b, "sends                %.1f datagrams per sendmmsg, %.2f per message (GSO trains)\n",
		r.DatagramsPerCall, r.DatagramsPerMessage)
	fmt.Fprintf(&b, "allocations          %.3f per forwarded packet (whole process)\n", r.AllocsPerPacket)
	fmt.Fprintf(&b, "GC                   %d collections, longest pause %.0f µs (longest stopping the world %.0f µs); "+
		"the load generator's beside it: %d, longest %.0f µs\n", r.GCs, us(r.GCPauseMax), us(r.GCStopMax), r.LoadGCs, us(r.LoadGCPauseMax))
	fmt.Fprintf(&b, "memory               RSS %.1f MB (peak %.1f), %.2f MB per participant\n",
		float64(r.RSS)/(1<<20), float64(r.PeakRSS)/(1<<20), r.RSSPerParticipant/(1<<20))
	fmt.Fprintf(&b, "  of it              %.1f MB anonymous (heap, stacks, runtime), %.1f MB file pages (the binary's, as its page cache holds them)\n",
		float64(r.AnonRSS)/(1<<20), float64(r.FileRSS)/(1<<20))
	fmt.Fprintf(&b, "load generator       %.1f %% of a core\n", r.LoadCPUPercent)
	b.WriteString(indent(r.Load.Summary(), "  "))
	if r.Floor.Forwarded > 0 {
		b.WriteString(r.Floor.Summary())
		fmt.Fprintf(&b, "  halves             %.2f µs per packet before the SFU's window, %.2f after\n", r.FloorBefore, r.FloorAfter)
		fmt.Fprintf(&b, "x_floor              %.2f (SFU CPU per forwarded packet over the floor's, same run)\n", r.XFloor)
		if r.StealSkewed() {
			fmt.Fprintf(&b, "  NOT COMPARABLE     the host stole %.1f %% of the busy CPU time in the SFU's window and %.1f %% in the floor's\n",
				r.StealPercent, r.Floor.StealPercent)
		}
	}
	return b.String()
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n") + "\n"
}

// Forward runs the forwarding benchmark: a server child, the scenario's
// participants, a warm-up, then the measured window.
func Forward(ctx context.Context, o ForwardOptions) (ForwardResult, error) {
	res := ForwardResult{Scenario: o.Scenario}
	var sc load.Scenario
	var err error
	if o.Custom != nil {
		sc, res.Scenario = *o.Custom, o.Custom.Name
	} else if sc, err = load.StandardScenario(o.Scenario); err != nil {
		return res, err
	}
	res.Participants = len(sc.Participants)
	var floorBefore FloorResult
	if o.FloorDuration > 0 {
		if floorBefore, err = floorHalf(ctx, o, &sc, "before the SFU"); err != nil {
			return res, err
		}
	}
	sfu, err := StartSFU(ctx, withProcs(o.Command, o.SFUProcs))
	if err != nil {
		return res, err
	}
	defer sfu.Close()
	run, err := load.Start(ctx, load.Config{
		URL: sfu.URL, Room: "bench-" + sc.Name, Participants: sc.Participants,
		Speech: sc.Speech, DTX: sc.DTX, Seed: o.Seed, NoFeedback: o.NoFeedback,
	})
	if err != nil {
		return res, err
	}
	defer run.Close()
	joinCtx, cancel := context.WithTimeout(ctx, 60*time.Second)
	err = run.WaitJoined(joinCtx)
	cancel()
	if err != nil {
		return res, err
	}
	progress(o.Progress, "all %d participants joined; warming up for %v\n", res.Participants, o.Warmup)
	if err := sleep(ctx, o.Warmup); err != nil {
		return res, err
	}
	if o.HeapProfile != "" { // before the window: writing it allocates
		if err := sfu.HeapProfile(o.HeapProfile + ".start"); err != nil {
			return res, err
		}
	}
	var tally Tally
	stopSampling := sample(run, &tally)
	a, err := sfu.Sample()
	if err != nil {
		return res, err
	}
	selfA, _ := ReadProc(os.Getpid())
	var selfGC uint32
	var selfMem runtime.MemStats
	runtime.ReadMemStats(&selfMem)
	pauseMaxSince(&selfMem, &selfGC) // from here
	loadA := run.Totals()
	if o.CPUProfile != "" {
		if err := sfu.StartProfile(o.CPUProfile); err != nil {
			return res, err
		}
	}
	if o.Trace != "" {
		if err := sfu.StartTrace(o.Trace); err != nil {
			return res, err
		}
	}
	err = measure(ctx, o.Duration, o.Progress, run, sfu)
	stopSampling()
	if err != nil {
		return res, err
	}
	if o.CPUProfile != "" {
		if err := sfu.StopProfile(); err != nil {
			return res, err
		}
	}
	if o.Trace != "" {
		if err := sfu.StopTrace(); err != nil {
			return res, err
		}
	}
	b, err := sfu.Sample()
	if err != nil {
		return res, err
	}
	selfB, _ := ReadProc(os.Getpid())
	gcBefore := selfGC
	runtime.ReadMemStats(&selfMem)
	res.LoadGCPauseMax = time.Duration(pauseMaxSince(&selfMem, &selfGC))
	res.LoadGCs = selfGC - gcBefore
	if o.HeapProfile != "" {
		if err := sfu.HeapProfile(o.HeapProfile); err != nil {
			return res, err
		}
	}
	loadB := run.Totals()
	// The SFU and the participants stop before the floor runs.
	run.Close()
	sfu.Close()
	res.Load = load.Between(run.Started(), loadA, loadB)
	res.fill(a, b)
	if d := selfB.At.Sub(selfA.At); d > 0 {
		res.LoadCPUPercent = 100 * float64(selfB.CPU()-selfA.CPU()) / float64(d)
	}
	audioPayload := 0.0
	if n := loadB.TxAudioPackets - loadA.TxAudioPackets; n > 0 {
		audioPayload = float64(loadB.TxAudioBytes-loadA.TxAudioBytes) / float64(n)
	}
	pps, bps, err := sc.Nominal(audioPayload)
	if err != nil {
		return res, err
	}
	res.Nominal = Rates{PacketsPerS: pps, BitsPerS: bps}
	res.Verdict = Verify(sc.Expected(), &tally, res.Nominal, Rates{PacketsPerS: res.PacketsPerS, BitsPerS: res.MbitPerS * 1e6})
	if o.FloorDuration > 0 {
		after, err := floorHalf(ctx, o, &sc, "after the SFU")
		if err != nil {
			return res, err
		}
		res.FloorBefore, res.FloorAfter = floorBefore.CPUMicros, after.CPUMicros
		res.Floor = MergeFloors(floorBefore, after)
		if res.Floor.CPUMicros > 0 {
			res.XFloor = res.CPUMicros / res.Floor.CPUMicros
		}
	}
	if !res.Verdict.OK() {
		return res, &ScenarioError{Verdict: res.Verdict}
	}
	return res, nil
}

// ScenarioError is Forward's error when the scenario did not hold; the result
// beside it is complete.
type ScenarioError struct{ Verdict Verdict }

func (e *ScenarioError) Error() string { return e.Verdict.Error() }

// floorHalf measures half of the run's floor: one half before the SFU starts
// and one after it stopped, so that the floor brackets the SFU's window on a
// host whose speed drifts (HostCPU).
func floorHalf(ctx context.Context, o ForwardOptions, sc *load.Scenario, when string) (FloorResult, error) {
	d := o.FloorDuration / 2
	progress(o.Progress, "the floor, %s: replaying %s's egress pattern for %v\n", when, sc.Name, d)
	warmup := floorWarmup
	if d < 2*floorWarmup { // a smoke run
		warmup = d / 4
	}
	f, err := Floor(ctx, FloorOptions{Custom: sc, Warmup: warmup, Duration: d, Command: o.FloorCommand, Seed: o.Seed})
	if err != nil {
		return f, fmt.Errorf("the floor, %s: %w", when, err)
	}
	return f, nil
}

// floorWarmup is the floor's warm-up: it has no estimate to ramp.
const floorWarmup = 2 * time.Second

// sampleEvery is how often the receptions are sampled in the measured window.
const sampleEvery = 100 * time.Millisecond

// sample tallies what the receivers get every sampleEvery until stopped.
func sample(run *load.Run, t *Tally) (stop func()) {
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(sampleEvery)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				t.Add(run.Receptions())
			}
		}
	}()
	return func() { close(done); <-finished }
}

func (r *ForwardResult) fill(a, b Sample) {
	r.Window = b.Proc.At.Sub(a.Proc.At)
	ma, mb := a.Stats.Meter, b.Stats.Meter
	r.ForwardedPackets = mb.ForwardedPackets - ma.ForwardedPackets
	r.ForwardedBytes = mb.ForwardedBytes - ma.ForwardedBytes
	r.ReceivedPackets = mb.ReceivedPackets - ma.ReceivedPackets
	sec := r.Window.Seconds()
	r.PacketsPerS = float64(r.ForwardedPackets) / sec
	r.MbitPerS = float64(r.ForwardedBytes) * 8 / sec / 1e6
	cpu := b.Proc.CPU() - a.Proc.CPU()
	r.CPUPercent = 100 * float64(cpu) / float64(r.Window)
	r.StealPercent = StealPercent(a.Proc.Host, b.Proc.Host)
	if n := float64(r.ForwardedPackets); n > 0 {
		r.CPUMicros = float64(cpu) / 1e3 / n
		r.UserMicros = float64(b.Proc.User-a.Proc.User) / 1e3 / n
		r.SysMicros = float64(b.Proc.System-a.Proc.System) / 1e3 / n
		r.AllocsPerPacket = float64(b.Stats.Mallocs-a.Stats.Mallocs) / n
	}
	lat := mb.Latency.Sub(ma.Latency)
	r.LatencyP50, r.LatencyP99, r.LatencyMax = lat.Quantile(0.5), lat.Quantile(0.99), lat.Max()
	r.LatencySamples = lat.Count()
	if calls := mb.WireCalls - ma.WireCalls; calls > 0 {
		r.DatagramsPerCall = float64(mb.WireDatagrams-ma.WireDatagrams) / float64(calls)
		r.DatagramsPerMessage = float64(mb.WireDatagrams-ma.WireDatagrams) / float64(mb.WireMessages-ma.WireMessages)
	}
	fwd := mb.ForwardLatency.Sub(ma.ForwardLatency)
	r.ForwardP50, r.ForwardP99 = fwd.Quantile(0.5), fwd.Quantile(0.99)
	r.GCs = b.Stats.NumGC - a.Stats.NumGC
	r.GCPauseMax = time.Duration(b.Stats.PauseMaxNs) // the GCs since sample a
	r.GCStopMax = time.Duration(b.Stats.StopMaxNs)
	r.ProcsStart, r.ProcsEnd = a.Stats.Procs, b.Stats.Procs
	r.RSS, r.PeakRSS = b.Proc.RSS, b.Proc.PeakRSS
	r.AnonRSS, r.FileRSS = b.Proc.AnonRSS, b.Proc.FileRSS
	if r.Participants > 0 {
		r.RSSPerParticipant = float64(r.RSS) / float64(r.Participants)
	}
}

// measure waits d, printing a line per second: the load's figures and the
// server's forwarded packets and bitrate.
func measure(ctx context.Context, d time.Duration, w io.Writer, run *load.Run, sfu *SFU) error {
	if w == nil {
		return sleep(ctx, d)
	}
	fmt.Fprintf(w, "%s %9s %9s\n", load.Header(), "sfu pps", "sfu Mb/s")
	end := time.Now().Add(d)
	prevLoad := run.Totals()
	prevMeter, err := sfu.Meter()
	if err != nil {
		return err
	}
	prevAt := time.Now()
	for time.Now().Before(end) {
		if err := sleep(ctx, min(time.Second, time.Until(end))); err != nil {
			return err
		}
		cur := run.Totals()
		m, err := sfu.Meter()
		if err != nil {
			return err
		}
		now := time.Now()
		sec := now.Sub(prevAt).Seconds()
		win := load.Between(run.Started(), prevLoad, cur)
		fmt.Fprintf(w, "%s %9.0f %9.2f   [%3.0f%%]\n", win.Line(),
			float64(m.Meter.ForwardedPackets-prevMeter.Meter.ForwardedPackets)/sec,
			float64(m.Meter.ForwardedBytes-prevMeter.Meter.ForwardedBytes)*8/sec/1e6,
			100*(1-float64(time.Until(end))/float64(d)))
		prevLoad, prevMeter, prevAt = cur, m, now
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func progress(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, format, args...)
	}
}
