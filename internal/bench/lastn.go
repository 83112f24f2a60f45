package bench

import (
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/podium-sfu/podium/internal/clip"
	"github.com/podium-sfu/podium/internal/load"
	"github.com/podium-sfu/podium/internal/signal"
)

// LastNOptions configure `podium bench lastn`, the reproduction of the Last N
// paper's experiments (Grozev et al., NOSSDAV 2015, section 5; thesis ch. 4): K
// load endpoints plus one receive-only endpoint in one conference, one random
// speaker at a time changing every 4 s.
type LastNOptions struct {
	Ks []int // conference sizes of the bitrate experiment (paper: 10, 15, 20, 25, 30)
	Ns []int // Last N values there, -1 for the full star (paper: -1, 8, 5, 3)
	// PausingK and PausingNs are the video pausing experiment: K fixed, N swept,
	// pausing on and off (paper: K = 30; N = 25, 20, 15, 10, 8, 5, 3, 2, 1 and the
	// full star drawn as N = K).
	PausingK  int
	PausingNs []int
	// Warmup follows each change of N; Duration is the measured window after it.
	Warmup, Duration time.Duration
	Clip             string // the endpoints' video (default clip.Video180p15)
	DTX              bool   // Opus DTX on silent endpoints
	OutDir           string // CSV, SVG plots and the markdown summary go here
	Command          SFUCommand
	Progress         io.Writer
	Seed             uint64
}

// DefaultLastN is the paper's set of experiments.
func DefaultLastN() LastNOptions {
	return LastNOptions{
		Ks: []int{10, 15, 20, 25, 30}, Ns: []int{-1, 8, 5, 3},
		PausingK: 30, PausingNs: []int{-1, 25, 20, 15, 10, 8, 5, 3, 2, 1},
		Warmup: 8 * time.Second, Duration: 30 * time.Second,
		Clip: clip.Video180p15, DTX: true,
	}
}

// Point is one measured configuration.
type Point struct {
	Experiment string // "bitrate" (K sweep), "pausing" (N sweep at PausingK), or both
	K, N       int    // N = -1: full star
	Pausing    bool
	Window     time.Duration
	// SFU figures, means over 1-second samples with their standard deviations.
	OutMbps, OutMbpsSD float64 // RTP bitrate the SFU sent
	InMbps             float64 // RTP bitrate the SFU received
	AggMbps, AggMbpsSD float64 // in + out
	CPU, CPUSD         float64 // SFU process, % of one core
	OutPps, InPps      float64
	// What the endpoints saw.
	VideoStreams     int // received video streams with packets in the last second, median of 1 s samples
	ExpectedStreams  int // what Last N should give: min(N,K) for the observer, min(N,K−1) for each endpoint
	AudioP99         time.Duration
	Attempts         int // windows measured: one more each time the load generator fell behind
	PausedPublishers int
	LossPercent      float64
	KeyframeWaits    uint64
	KeyframeWaitP50  time.Duration
}

// LastN runs the experiments and writes their results into o.OutDir.
func LastN(ctx context.Context, o LastNOptions) ([]Point, error) {
	var points []Point
	if o.Clip == "" {
		o.Clip = clip.Video180p15
	}
	// Pausing on: the K sweep, with the pausing experiment's N values at PausingK.
	nsOn := func(k int) []int {
		if k != o.PausingK {
			return o.Ns
		}
		return union(o.Ns, o.PausingNs)
	}
	ks := slices.Clone(o.Ks)
	if !slices.Contains(ks, o.PausingK) {
		ks = append(ks, o.PausingK)
	}
	on, err := o.phase(ctx, true, ks, nsOn)
	points = append(points, on...)
	if err != nil {
		return points, err
	}
	off, err := o.phase(ctx, false, []int{o.PausingK}, func(int) []int { return o.PausingNs })
	points = append(points, off...)
	if err != nil {
		return points, err
	}
	for i := range points {
		p := &points[i]
		var tags []string
		if p.Pausing && slices.Contains(o.Ks, p.K) && slices.Contains(o.Ns, p.N) {
			tags = append(tags, "bitrate")
		}
		if p.K == o.PausingK && slices.Contains(o.PausingNs, p.N) {
			tags = append(tags, "pausing")
		}
		p.Experiment = strings.Join(tags, "+")
	}
	if o.OutDir != "" {
		if err := WriteLastN(o.OutDir, o, points); err != nil {
			return points, err
		}
	}
	return points, nil
}

func union(a, b []int) []int {
	out := slices.Clone(a)
	for _, x := range b {
		if !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	// Full star first, then N downwards: each step pauses more senders.
	slices.SortFunc(out, func(x, y int) int { return nkey(y) - nkey(x) })
	return out
}

func nkey(n int) int {
	if n < 0 {
		return math.MaxInt32
	}
	return n
}

// phase runs one server (pausing on or off) through conferences of each K.
func (o LastNOptions) phase(ctx context.Context, pausing bool, ks []int, ns func(int) []int) ([]Point, error) {
	sfu, err := StartSFU(ctx, o.Command, "--video-pausing="+strconv.FormatBool(pausing), "--last-n", "-1")
	if err != nil {
		return nil, err
	}
	defer sfu.Close()
	var points []Point
	for _, k := range ks {
		pts, err := o.conference(ctx, sfu, pausing, k, ns(k))
		points = append(points, pts...)
		if err != nil {
			return points, err
		}
	}
	return points, nil
}

// conference joins K endpoints and the observer, then measures each N.
func (o LastNOptions) conference(ctx context.Context, sfu *SFU, pausing bool, k int, ns []int) ([]Point, error) {
	endpoint := load.ParticipantSpec{Audio: true, Video: load.VideoSingle, Clips: []string{o.Clip}, View: load.View{Width: 320, Height: 180, Role: "thumbnail"}}
	// The paper's Chrome endpoint, camera and microphone off, joins last. Like the
	// paper's load endpoints, ours do not ask for retransmissions: with 30 of them on
	// two cores, packets an endpoint drops while it falls behind would be NACKed,
	// and the SFU answers every NACK (docs/performance.md), which feeds on itself.
	specs := append(load.Group("e", k, endpoint), load.ParticipantSpec{Name: "observer", View: endpoint.View})
	run, err := load.Start(ctx, load.Config{
		URL: sfu.URL, Room: fmt.Sprintf("lastn-k%d-pausing-%v", k, pausing), Participants: specs,
		Speech: load.SpeechPaper, DTX: o.DTX, NoNACK: true, Seed: o.Seed + uint64(k),
	})
	if err != nil {
		return nil, err
	}
	defer run.Close()
	joinCtx, cancel := context.WithTimeout(ctx, 90*time.Second)
	err = run.WaitJoined(joinCtx)
	cancel()
	if err != nil {
		return nil, err
	}
	var points []Point
	for _, n := range ns {
		lastN := n
		if err := run.Send(signal.TypeRoomSettings, signal.RoomSettings{LastN: &lastN}); err != nil {
			return points, err
		}
		if err := sleep(ctx, o.Warmup); err != nil {
			return points, err
		}
		// On a shared machine the load generator can fall behind (its receive
		// queues grow): then the window measured a starved SFU. Such windows are
		// measured again, twice at most, and the attempts recorded.
		var p Point
		for attempt := 1; attempt <= maxAttempts; attempt++ {
			p, err = o.measure(ctx, sfu, run)
			if err != nil {
				return points, err
			}
			p.K, p.N, p.Pausing, p.Attempts = k, n, pausing, attempt
			p.ExpectedStreams = expectedStreams(k, n)
			if p.healthy() {
				break
			}
			progress(o.Progress, "K=%-3d N=%-3s pausing=%-5v: %d of %d video streams, audio p99 %v — measuring again\n",
				k, nName(n), pausing, p.VideoStreams, p.ExpectedStreams, p.AudioP99.Round(time.Millisecond))
		}
		points = append(points, p)
		progress(o.Progress, "K=%-3d N=%-3s pausing=%-5v out %7.2f ± %5.2f Mbit/s  in %6.2f  aggregate %7.2f  SFU CPU %5.1f %% ± %4.1f  video streams %4d  paused %2d  loss %.2f%%\n",
			k, nName(n), pausing, p.OutMbps, p.OutMbpsSD, p.InMbps, p.AggMbps, p.CPU, p.CPUSD, p.VideoStreams, p.PausedPublishers, p.LossPercent)
	}
	return points, nil
}

// measure samples the server every second for o.Duration.
func (o LastNOptions) measure(ctx context.Context, sfu *SFU, run *load.Run) (Point, error) {
	var p Point
	loadA := run.Totals()
	prev, err := sfu.Meter()
	if err != nil {
		return p, err
	}
	prevProc, err := ReadProc(sfu.PID)
	if err != nil {
		return p, err
	}
	first, firstProc := prev, prevProc
	var outs, aggs, cpus []float64
	var streams, paused []int
	end := time.Now().Add(o.Duration)
	for time.Now().Before(end) {
		if err := sleep(ctx, min(time.Second, time.Until(end))); err != nil {
			return p, err
		}
		cur, err := sfu.Meter()
		if err != nil {
			return p, err
		}
		proc, err := ReadProc(sfu.PID)
		if err != nil {
			return p, err
		}
		sec := proc.At.Sub(prevProc.At).Seconds()
		out := float64(cur.Meter.ForwardedBytes-prev.Meter.ForwardedBytes) * 8 / sec / 1e6
		in := float64(cur.Meter.ReceivedBytes-prev.Meter.ReceivedBytes) * 8 / sec / 1e6
		outs, aggs = append(outs, out), append(aggs, out+in)
		cpus = append(cpus, 100*float64(proc.CPU()-prevProc.CPU())/float64(proc.At.Sub(prevProc.At)))
		tot := run.Totals()
		streams, paused = append(streams, tot.RxVideoStreams), append(paused, tot.PausedPublishers)
		prev, prevProc = cur, proc
	}
	p.Window = prevProc.At.Sub(firstProc.At)
	sec := p.Window.Seconds()
	p.OutMbps = float64(prev.Meter.ForwardedBytes-first.Meter.ForwardedBytes) * 8 / sec / 1e6
	p.InMbps = float64(prev.Meter.ReceivedBytes-first.Meter.ReceivedBytes) * 8 / sec / 1e6
	p.AggMbps = p.OutMbps + p.InMbps
	p.OutPps = float64(prev.Meter.ForwardedPackets-first.Meter.ForwardedPackets) / sec
	p.InPps = float64(prev.Meter.ReceivedPackets-first.Meter.ReceivedPackets) / sec
	p.CPU = 100 * float64(prevProc.CPU()-firstProc.CPU()) / float64(p.Window)
	p.OutMbpsSD, p.AggMbpsSD, p.CPUSD = stddev(outs), stddev(aggs), stddev(cpus)
	w := load.Between(run.Started(), loadA, run.Totals())
	// A stream counts as received while a packet came in the last second, so a
	// speaker change shortly before a sample counts the outgoing speaker too: the
	// median of the per-second samples is the steady count.
	p.VideoStreams, p.PausedPublishers = median(streams), median(paused)
	p.LossPercent = w.LossPercent
	p.KeyframeWaits, p.KeyframeWaitP50 = w.KeyframeWaits, w.KeyframeWaitP50
	p.AudioP99 = w.AudioLatencyP99
	return p, nil
}

const maxAttempts = 3

// expectedStreams is the number of video streams the SFU sends with K endpoints
// and the observer: each endpoint receives min(N, K−1), the observer min(N, K).
func expectedStreams(k, n int) int {
	if n < 0 {
		n = k
	}
	return min(n, k) + k*min(n, k-1)
}

// healthy reports whether the load generator kept up: the SFU's video streams
// arrive (5 % slack for a speaker change at the window's edge) and audio crosses
// the SFU and the generator in well under a second.
func (p Point) healthy() bool {
	return float64(p.VideoStreams) >= 0.95*float64(p.ExpectedStreams) && p.AudioP99 < 500*time.Millisecond
}

func median(xs []int) int {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func stddev(xs []float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	mean := sum / float64(len(xs))
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return math.Sqrt(ss / float64(len(xs)-1))
}

func nName(n int) string {
	if n < 0 {
		return "all"
	}
	return strconv.Itoa(n)
}

// The paper's figures (section 5.3 and 5.4).
var (
	paperOutGain = map[int]float64{8: 72, 5: 82, 3: 89}
	paperAggGain = map[int]float64{8: 72, 5: 82, 3: 88}
)

const (
	paperPausingBitrate = 8  // % less aggregate bitrate with pausing, K = 30, N = 8
	paperPausingCPU     = 16 // % less CPU
)

// find returns the point for (k, n, pausing).
func find(points []Point, k, n int, pausing bool) (Point, bool) {
	for _, p := range points {
		if p.K == k && p.N == n && p.Pausing == pausing {
			return p, true
		}
	}
	return Point{}, false
}

func gain(full, x float64) float64 {
	if full <= 0 {
		return 0
	}
	return 100 * (1 - x/full)
}

// WriteLastN writes lastn.csv, the three plots and lastn-summary.md into dir.
func WriteLastN(dir string, o LastNOptions, points []Point) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := writeCSV(filepath.Join(dir, "lastn.csv"), points); err != nil {
		return err
	}
	for name, c := range lastNCharts(o, points) {
		if err := os.WriteFile(filepath.Join(dir, name), c.SVG(), 0o644); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(dir, "lastn-summary.md"), []byte(LastNSummary(o, points)), 0o644)
}

func writeCSV(path string, points []Point) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	_ = w.Write([]string{"experiment", "k", "n", "pausing", "window_s", "out_mbps", "out_mbps_sd", "in_mbps", "aggregate_mbps", "aggregate_mbps_sd",
		"out_pps", "in_pps", "sfu_cpu_pct", "sfu_cpu_pct_sd", "video_streams_received", "video_streams_expected", "paused_publishers", "rx_loss_pct",
		"keyframe_waits", "keyframe_wait_p50_ms", "audio_e2e_p99_ms", "attempts"})
	for _, p := range points {
		_ = w.Write([]string{p.Experiment, strconv.Itoa(p.K), strconv.Itoa(p.N), strconv.FormatBool(p.Pausing), f1(p.Window.Seconds()),
			f3(p.OutMbps), f3(p.OutMbpsSD), f3(p.InMbps), f3(p.AggMbps), f3(p.AggMbpsSD), f1(p.OutPps), f1(p.InPps), f1(p.CPU), f1(p.CPUSD),
			strconv.Itoa(p.VideoStreams), strconv.Itoa(p.ExpectedStreams), strconv.Itoa(p.PausedPublishers), f3(p.LossPercent), strconv.FormatUint(p.KeyframeWaits, 10),
			f1(float64(p.KeyframeWaitP50) / 1e6), f1(float64(p.AudioP99) / 1e6), strconv.Itoa(p.Attempts)})
	}
	w.Flush()
	if err := w.Error(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
func f3(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }

// lastNCharts are the paper's figures 3, 4 and 5 with our measurements.
func lastNCharts(o LastNOptions, points []Point) map[string]Chart {
	charts := map[string]Chart{}
	fig3 := Chart{Title: "SFU outbound bitrate (video pausing on) — cf. Last N paper, Fig. 3",
		XLabel: "load endpoints K (plus one receive-only endpoint)", YLabel: "outbound bitrate, Mbit/s (RTP)"}
	for _, n := range o.Ns {
		s := Series{Name: "Last N = " + nName(n)}
		if n < 0 {
			s.Name = "full star"
		}
		for _, k := range o.Ks {
			if p, ok := find(points, k, n, true); ok {
				s.X, s.Y, s.Err = append(s.X, float64(k)), append(s.Y, p.OutMbps), append(s.Err, p.OutMbpsSD)
			}
		}
		fig3.Series = append(fig3.Series, s)
	}
	charts["lastn-outbound.svg"] = fig3

	k := o.PausingK
	// The full star is drawn at N = K, as in the paper.
	var ticks []float64
	var labels []string
	for _, n := range o.PausingNs {
		x := float64(n)
		if n < 0 {
			x = float64(k)
		}
		ticks = append(ticks, x)
		labels = append(labels, nName(n))
	}
	fig4 := Chart{Title: fmt.Sprintf("SFU aggregate bitrate, K = %d — cf. Last N paper, Fig. 4", k),
		XLabel: "N (\"all\": Last N off)", YLabel: "aggregate bitrate (in + out), Mbit/s", XTicks: ticks, XTickLabels: labels}
	fig5 := Chart{Title: fmt.Sprintf("SFU CPU usage, K = %d — cf. Last N paper, Fig. 5", k),
		XLabel: "N (\"all\": Last N off)", YLabel: "SFU process CPU, % of one core", XTicks: ticks, XTickLabels: labels}
	for _, pausing := range []bool{true, false} {
		name := "video pausing on"
		if !pausing {
			name = "video pausing off"
		}
		sb, sc := Series{Name: name}, Series{Name: name}
		ns := slices.Clone(o.PausingNs)
		slices.SortFunc(ns, func(a, b int) int { return nkey(a) - nkey(b) })
		for _, n := range ns {
			p, ok := find(points, k, n, pausing)
			if !ok {
				continue
			}
			x := float64(n)
			if n < 0 {
				x = float64(k)
			}
			sb.X, sb.Y, sb.Err = append(sb.X, x), append(sb.Y, p.AggMbps), append(sb.Err, p.AggMbpsSD)
			sc.X, sc.Y, sc.Err = append(sc.X, x), append(sc.Y, p.CPU), append(sc.Err, p.CPUSD)
		}
		fig4.Series, fig5.Series = append(fig4.Series, sb), append(fig5.Series, sc)
	}
	charts["lastn-pausing-bitrate.svg"] = fig4
	charts["lastn-pausing-cpu.svg"] = fig5
	return charts
}

// LastNSummary is the markdown comparison with the paper.
func LastNSummary(o LastNOptions, points []Point) string {
	var b strings.Builder
	kmax := slices.Max(o.Ks)
	fmt.Fprintf(&b, "### Outbound bitrate gain of Last N over the full star at K = %d (video pausing on)\n\n", kmax)
	b.WriteString("| N | paper, outbound | Podium, outbound | difference | paper, aggregate | Podium, aggregate | video streams sent (expected) |\n|---|---|---|---|---|---|---|\n")
	full, okFull := find(points, kmax, -1, true)
	for _, n := range o.Ns {
		if n < 0 {
			continue
		}
		p, ok := find(points, kmax, n, true)
		if !ok || !okFull {
			continue
		}
		og, ag := gain(full.OutMbps, p.OutMbps), gain(full.AggMbps, p.AggMbps)
		paperO, paperA := "–", "–"
		diff := "–"
		if g, ok := paperOutGain[n]; ok {
			paperO, diff = fmt.Sprintf("%.0f %%", g), fmt.Sprintf("%+.1f pp", og-g)
		}
		if g, ok := paperAggGain[n]; ok {
			paperA = fmt.Sprintf("%.0f %%", g)
		}
		fmt.Fprintf(&b, "| %d | %s | %.1f %% | %s | %s | %.1f %% | %d (%d) |\n", n, paperO, og, diff, paperA, ag, p.VideoStreams, expectedStreams(kmax, n))
	}
	if okFull {
		// Each endpoint receives K−1 videos and the observer K: K² (the paper
		// writes (K+1)(K−1), one fewer).
		fmt.Fprintf(&b, "| all | – | %.1f Mbit/s | | – | %.1f Mbit/s | %d (%d) |\n", full.OutMbps, full.AggMbps, full.VideoStreams, expectedStreams(kmax, -1))
	}
	k := o.PausingK
	on, ok1 := find(points, k, 8, true)
	off, ok2 := find(points, k, 8, false)
	if ok1 && ok2 {
		fmt.Fprintf(&b, "\n### Video pausing at K = %d, N = 8\n\n", k)
		b.WriteString("| | paper | Podium |\n|---|---|---|\n")
		fmt.Fprintf(&b, "| aggregate bitrate, pausing on vs off | −%d %% | %+.1f %% (%.1f vs %.1f Mbit/s) |\n",
			paperPausingBitrate, -gain(off.AggMbps, on.AggMbps), on.AggMbps, off.AggMbps)
		fmt.Fprintf(&b, "| SFU CPU, pausing on vs off | −%d %% | %+.1f %% (%.1f vs %.1f %% of a core) |\n",
			paperPausingCPU, -gain(off.CPU, on.CPU), on.CPU, off.CPU)
		fmt.Fprintf(&b, "| senders paused (expected K−N−1 = %d) | – | %d |\n", k-8-1, on.PausedPublishers)
	}
	b.WriteString("\n### All measurements\n\n")
	b.WriteString("| K | N | pausing | out Mbit/s | in Mbit/s | aggregate | SFU CPU % | video streams (expected) | paused | loss % | audio p99 | windows |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, p := range points {
		fmt.Fprintf(&b, "| %d | %s | %v | %.2f ± %.2f | %.2f | %.2f | %.1f ± %.1f | %d (%d) | %d | %.2f | %.0f ms | %d |\n",
			p.K, nName(p.N), p.Pausing, p.OutMbps, p.OutMbpsSD, p.InMbps, p.AggMbps, p.CPU, p.CPUSD, p.VideoStreams, p.ExpectedStreams,
			p.PausedPublishers, p.LossPercent, float64(p.AudioP99)/1e6, p.Attempts)
	}
	return b.String()
}
