//go:build linux

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/podium-sfu/podium/internal/bench"
)

// Issue 22: does the SFU hold its share of a bottleneck beside loss-based TCP?
// The paper's three patterns of competing flows (paper 003, Appendix A,
// Fig. A.1), scaled to CI, on one receiver behind a 4 Mb/s tbf downlink with a
// 100 ms queue, watching two 720p simulcast senders of high-entropy content
// (highEntropyCamera: temporal noise over the whole frame and a moving test
// pattern, on a colour that says whose picture it is), one of them on stage.
// The competing flows are iperf3 -C cubic from the host to iperf3 servers in
// the receiver's namespace (the kernel's default is BBR: a last phase runs one
// BBR flow, reported only). One browser set goes through every pattern in turn.

const (
	shareLinkKbps  = 4000
	shareQueue     = 100 * time.Millisecond
	shareFlows     = 10
	iperfBasePort  = 15201
	shareRecovery  = 5 * time.Second // back on the previous layers after the flows stop
	shareQueueP95  = 50 * time.Millisecond
	shareOneFlowKb = 1300 // video kept against one flow, kb/s over 60 s

	// Guards (targets_test.go): what the code of 25 Nov keeps with margin
	// (measured: 381–603 kb/s and 25 fps against one flow; 7–23 fps and
	// 1.9–6.4 % audio loss against ten; recovery 1.5–10+ s; queue p95 52–55 ms).
	// Against ten, two runs of 26 Nov decoded 2.2 and 2.3 fps in one phase,
	// through 10–45 % loss with the stage kept on 360p: the fps guard only
	// catches a stage that stopped; the 80 % of samples playing still holds.
	// Audio loss is what the listener hears (concealed samples): 3.3–14 % of
	// it against ten before RED (packets lost 3.5–14 %), 0–1.8 % with RED in
	// two runs (packets lost 2.7–9 %); the guard catches RED gone where loss
	// is high.
	guardOneFlowKb    = 250
	guardOneFlowFPS   = 15
	guardTenFPS       = 1
	guardTenAudioLoss = 0.05
	guardRecovery     = 25 * time.Second
	guardQueueP95     = 90 * time.Millisecond
	// minTCPKbps: less than this over a phase means iperf3 did not run.
	minTCPKbps = 250
)

// highEntropyCamera is camera (media_test.go) with temporal noise over the
// whole frame, as a real sensor gives: the encoder spends its whole budget on
// every layer. The centre stays c on average (the noise is zero-mean), so
// showsWho still tells the senders apart.
func highEntropyCamera(t *testing.T, c colour, width, height int) chromedp.ExecAllocatorOption {
	t.Helper()
	pw, ph := width/4, height/6
	graph := fmt.Sprintf("color=c=%s:s=%dx%d:r=30:d=1[bg];testsrc2=s=%dx%d:r=30:d=1[fg];"+
		"[bg][fg]overlay=x='mod(t*%d,%d)':y=0,noise=alls=16:allf=t",
		c.hex(), width, height, pw, ph, width/2, width-pw)
	file := mediaFile(t, fmt.Sprintf("%s-%dx%d-noisy.y4m", c.Name, width, height),
		"-f", "lavfi", "-i", graph, "-pix_fmt", "yuv420p")
	return chromedp.Flag("use-file-for-fake-video-capture", file)
}

// capWithQueue is Cap with a queue of the given length instead of 200 ms.
func (l *Link) capWithQueue(kbps int, queue time.Duration) {
	l.t.Helper()
	bytesPerSec := int64(kbps) * 1000 / 8
	burst := max(1600, bytesPerSec/100)
	limit := max(burst+bytesPerSec*int64(queue)/int64(time.Second), 4*mtuOnWire)
	l.run(l.tc, "qdisc", "replace", "dev", l.HostDev, "root", "handle", "1:", "tbf", "rate", strconv.Itoa(kbps)+"kbit",
		"burst", strconv.FormatInt(burst, 10), "limit", strconv.FormatInt(limit, 10))
	l.capped = true
}

var backlogRe = regexp.MustCompile(`backlog (\d+)b`)

// backlog is the bytes queued in the link's root qdisc now (-1 if unreadable).
func (l *Link) backlog() int {
	out, err := exec.Command(l.tc, "-s", "qdisc", "show", "dev", l.HostDev).Output()
	if err != nil {
		return -1
	}
	m := backlogRe.FindSubmatch(out)
	if m == nil {
		return -1
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

// iperfFarm is shareFlows iperf3 servers in the link's namespace, one port
// each, counting the bytes they report received (goodput).
type iperfFarm struct {
	t    *testing.T
	l    *Link
	bin  string
	mu   sync.Mutex
	recv int64 // bytes, summed over the servers' interval reports
	wg   sync.WaitGroup
}

// iperf3's interval line: "[  5]   1.00-2.00   sec   448 KBytes  3.67 Mbits/sec" (a
// summary line ends in "receiver" or "sender").
var iperfInterval = regexp.MustCompile(`^\[\s*\d+\]\s+[\d.]+-[\d.]+\s+sec\s+([\d.]+)\s+([KMG]?)Bytes\s+[\d.]+\s+[KMG]?bits/sec\s*$`)

func iperfBytes(line string) (int64, bool) {
	m := iperfInterval.FindStringSubmatch(line)
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, false
	}
	mult := map[string]float64{"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[m[2]]
	return int64(v * mult), true
}

func startIperfFarm(t *testing.T, l *Link) *iperfFarm {
	t.Helper()
	bin, err := exec.LookPath("iperf3")
	if err != nil {
		skipOrFail(t, "iperf3 not installed (apt-get install -y iperf3): it makes the competing TCP flows")
	}
	f := &iperfFarm{t: t, l: l, bin: bin}
	for i := range shareFlows {
		cmd := exec.Command(l.ip, "netns", "exec", l.NS, bin, "-s", "-B", l.NSIP.String(), "-p", strconv.Itoa(iperfBasePort+i),
			"-i", "1", "--forceflush")
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatalf("iperf3 server: %v", err)
		}
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				if n, ok := iperfBytes(sc.Text()); ok {
					f.mu.Lock()
					f.recv += n
					f.mu.Unlock()
				}
			}
		}()
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	}
	// The servers listen within a moment; a client's first connect retries anyway.
	time.Sleep(500 * time.Millisecond)
	return f
}

func (f *iperfFarm) received() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.recv
}

// flow sends TCP with congestion control cc (cubic, bbr) from the host to
// server i for d, in the background; the returned channel closes when it ends.
func (f *iperfFarm) flow(i int, cc string, d time.Duration) <-chan struct{} {
	done := make(chan struct{})
	ctx, cancel := context.WithTimeout(context.Background(), d+15*time.Second)
	cmd := exec.CommandContext(ctx, f.bin, "-c", f.l.NSIP.String(), "-p", strconv.Itoa(iperfBasePort+i), "-C", cc,
		"-t", strconv.Itoa(int(d.Round(time.Second)/time.Second)), "-i", "0", "--connect-timeout", "3000")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	go func() {
		defer close(done)
		defer cancel()
		var out []byte
		var err error
		for try := 0; try < 3; try++ { // the server may still be closing its last test
			if out, err = cmd.CombinedOutput(); err == nil {
				return
			}
			if strings.Contains(string(out), "busy") {
				time.Sleep(300 * time.Millisecond)
				cmd = exec.CommandContext(ctx, cmd.Path, cmd.Args[1:]...)
				cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
				continue
			}
			break
		}
		f.t.Logf("iperf3 flow %d (%s): %v: %s", i, cc, err, strings.TrimSpace(string(out)))
	}()
	return done
}

// tcpRow is one second of the run.
type tcpRow struct {
	At                  time.Time
	Phase               string
	Flows               int
	TCPBytes            int64 // iperf3 servers' total so far
	VideoBytes          int64 // receiver's inbound video payload, all sources
	AudioRecv, AudioLos int   // receiver's inbound audio packets, all sources
	// Samples the receiver's audio decoder played, and those of them it
	// concealed (made up for audio that was missing at playout): what a
	// listener hears lost, after RED and FEC recovered what they could.
	AudioSamples, AudioConcealed int64
	StageEnc, OtherEnc           int // the SFU's encoding of each sender's video (-1 none)
	Estimate                     int // SFU estimate, b/s
	QueueMS                      float64
}

// shareRun is the test's state: the rig (stage sampler), the other sender, the
// flows, and the per-second rows and 200 ms queue samples.
type shareRun struct {
	*rig
	other string
	farm  *iperfFarm

	mu      sync.Mutex
	phase   string
	flows   int
	rows    []tcpRow
	queues  []queueSample
	figures []string // the ADAPTATION lines, for tcp-share.txt
}

// figure logs an ADAPTATION line and keeps it for tcp-share.txt.
func (s *shareRun) figure(format string, args ...any) {
	s.t.Helper()
	line := fmt.Sprintf(format, args...)
	s.t.Log(line)
	s.mu.Lock()
	s.figures = append(s.figures, line)
	s.mu.Unlock()
}

type queueSample struct {
	At    time.Time
	Delay time.Duration
}

func (s *shareRun) setPhase(name string, flows int) {
	s.mu.Lock()
	s.phase, s.flows = name, flows
	s.mu.Unlock()
}

// sampleLoop reads the queue every 200 ms and the rest every second.
func (s *shareRun) sampleLoop(stop <-chan struct{}) {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	n, sum := 0, 0.0
	for i := 0; ; i++ {
		if b := s.link.backlog(); b >= 0 {
			d := time.Duration(float64(b) * 8 / (shareLinkKbps * 1000) * float64(time.Second))
			s.mu.Lock()
			s.queues = append(s.queues, queueSample{time.Now(), d})
			s.mu.Unlock()
			n++
			sum += float64(d) / float64(time.Millisecond)
		}
		if i%5 == 4 {
			row := s.read()
			if n > 0 {
				row.QueueMS = sum / float64(n)
			}
			n, sum = 0, 0
			s.mu.Lock()
			row.Phase, row.Flows = s.phase, s.flows
			s.rows = append(s.rows, row)
			s.mu.Unlock()
		}
		s.mu.Lock()
		ph := s.phase
		s.mu.Unlock()
		s.traceDownlink(ph)
		select {
		case <-stop:
			return
		case <-tick.C:
		}
	}
}

// read is the receiver's raw getStats totals and the SFU's layers now.
func (s *shareRun) read() tcpRow {
	var got struct {
		Video     int64 `json:"video"`
		AudioRecv int   `json:"audioRecv"`
		AudioLost int   `json:"audioLost"`
		Samples   int64 `json:"samples"`
		Concealed int64 `json:"concealed"`
		BW        *struct {
			Estimate int `json:"estimate"`
			Videos   map[string]struct {
				Encoding int `json:"encoding"`
			} `json:"videos"`
		} `json:"bw"`
	}
	at := time.Now()
	err := s.receiver.eval(`(async () => {
		const c = {video: 0, audioRecv: 0, audioLost: 0, samples: 0, concealed: 0};
		for (const pc of window.__podiumTest.pcs) {
			if (pc.connectionState === 'closed') continue;
			(await pc.getStats()).forEach(r => {
				if (r.type !== 'inbound-rtp') return;
				if (r.kind === 'video') c.video += r.bytesReceived || 0;
				if (r.kind !== 'audio') return;
				c.audioRecv += r.packetsReceived || 0; c.audioLost += r.packetsLost || 0;
				c.samples += r.totalSamplesReceived || 0; c.concealed += r.concealedSamples || 0;
			});
		}
		const p = window.podium;
		c.bw = p && p.bandwidth ? p.bandwidth() : null;
		return c;
	})()`, &got)
	row := tcpRow{At: at, TCPBytes: s.farm.received(), StageEnc: -1, OtherEnc: -1}
	if err != nil {
		return row
	}
	row.VideoBytes, row.AudioRecv, row.AudioLos = got.Video, got.AudioRecv, got.AudioLost
	row.AudioSamples, row.AudioConcealed = got.Samples, got.Concealed
	if got.BW != nil {
		row.Estimate = got.BW.Estimate
		if v, ok := got.BW.Videos[s.senderID]; ok {
			row.StageEnc = v.Encoding
		}
		if v, ok := got.BW.Videos[s.other]; ok {
			row.OtherEnc = v.Encoding
		}
	}
	return row
}

func (s *shareRun) snapshot() ([]tcpRow, []queueSample) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.rows), slices.Clone(s.queues)
}

// window is what the rows of [from, to] add up to.
type shareWindow struct {
	VideoKbps, TCPKbps float64
	PacketLoss         float64 // audio packets lost / (lost + received), 0..1: before any recovery
	AudioLoss          float64 // audio samples concealed / played, 0..1: what a listener hears lost
	QueueP95           time.Duration
}

func (s *shareRun) window(from, to time.Time) shareWindow {
	rows, qs := s.snapshot()
	var first, last *tcpRow
	for i := range rows {
		r := &rows[i]
		if r.At.Before(from) || r.At.After(to) {
			continue
		}
		if first == nil {
			first = r
		}
		last = r
	}
	var w shareWindow
	if first != nil && last != first {
		d := last.At.Sub(first.At).Seconds()
		w.VideoKbps = float64(last.VideoBytes-first.VideoBytes) * 8 / 1000 / d
		w.TCPKbps = float64(last.TCPBytes-first.TCPBytes) * 8 / 1000 / d
		lost, recv := last.AudioLos-first.AudioLos, last.AudioRecv-first.AudioRecv
		if lost+recv > 0 {
			w.PacketLoss = float64(max(lost, 0)) / float64(max(lost, 0)+recv)
		}
		if n := last.AudioSamples - first.AudioSamples; n > 0 {
			w.AudioLoss = float64(max(last.AudioConcealed-first.AudioConcealed, 0)) / float64(n)
		}
	}
	var ds []time.Duration
	for _, q := range qs {
		if !q.At.Before(from) && !q.At.After(to) {
			ds = append(ds, q.Delay)
		}
	}
	if len(ds) > 0 {
		slices.Sort(ds)
		w.QueueP95 = ds[min(len(ds)-1, int(math.Ceil(0.95*float64(len(ds))))-1)]
	}
	return w
}

// layers is the most frequent (stage, other) encoding over the last d: what
// the receiver "was on".
func (s *shareRun) layers(d time.Duration) (stage, other int) {
	rows, _ := s.snapshot()
	count := map[[2]int]int{}
	best, bestN := [2]int{-1, -1}, 0
	for _, r := range rows {
		if time.Since(r.At) > d {
			continue
		}
		k := [2]int{r.StageEnc, r.OtherEnc}
		count[k]++
		if count[k] > bestN {
			best, bestN = k, count[k]
		}
	}
	return best[0], best[1]
}

// backOn waits up to timeout for the SFU to forward at least the given
// encodings again (the stage's from the 200 ms sampler, the other's from the
// 1 s rows) and returns how long after from that happened.
func (s *shareRun) backOn(from time.Time, stage, other int, timeout time.Duration) (time.Duration, bool) {
	deadline := from.Add(timeout)
	for {
		ss := s.s.Samples()
		stageAt, ok := ss.Until(from, func(v videoSample) bool { return v.Encoding >= stage })
		if ok {
			rows, _ := s.snapshot()
			for _, r := range rows {
				if r.At.After(from.Add(stageAt)) && r.OtherEnc >= other {
					return max(stageAt, 0), true // the other's 1 s row may lag; the stage's time counts
				}
			}
		}
		if time.Now().After(deadline) {
			return time.Since(from), false
		}
		time.Sleep(sampleEvery)
	}
}

// phaseFigures judges and reports one window; ten: the "against ten flows"
// targets, one: the "against one flow" targets.
func (s *shareRun) phaseFigures(name string, from, to time.Time, one, ten bool) {
	t := s.t
	t.Helper()
	w := s.window(from, to)
	ss := s.s.Samples()
	fps := ss.MeanFPS(from, to)
	stall := ss.LongestFreeze(from, to)
	suspended, onLowest := 0, 0
	win := ss.Window(from, to)
	for _, v := range win {
		if v.Suspended {
			suspended++
		}
		if v.OK && v.Encoding >= 0 && !v.Suspended {
			onLowest++
		}
	}
	s.figure("ADAPTATION scenario=tcp-share phase=%s video_kbps=%.0f tcp_kbps=%.0f stage_kbps=%.0f stage_fps=%.1f longest_stall=%s frozen_s=%.1f "+
		"audio_loss=%.2f%% audio_packet_loss=%.2f%% queue_p95_ms=%d stage_samples_suspended=%d/%d height_changes=%d", name, w.VideoKbps, w.TCPKbps, ss.Bitrate(from, to),
		fps, secs(stall), ss.FrozenSeconds(from, to), 100*w.AudioLoss, 100*w.PacketLoss, w.QueueP95.Milliseconds(), suspended, len(win), ss.HeightChanges(from, to))
	// A flow that ran gets far more than this over a phase; how much more
	// depends on how well the video holds its share (CI: 966 kb/s beside
	// 2.6 Mb/s of video against one flow), so this only catches iperf3 failing.
	if (one || ten) && w.TCPKbps < minTCPKbps {
		t.Errorf("%s: the competing TCP got %.0f kb/s: the flows did not run", name, w.TCPKbps)
	}
	if one {
		issueTarget(t, w.VideoKbps >= shareOneFlowKb, 22, "%s: video to the receiver %.0f kb/s against one CUBIC flow (TCP %.0f kb/s), want at least %d",
			name, w.VideoKbps, w.TCPKbps, shareOneFlowKb)
		issueTarget(t, fps >= 20, 22, "%s: stage decoded at %.1f fps against one CUBIC flow, want at least 20", name, fps)
		if w.VideoKbps < guardOneFlowKb || fps < guardOneFlowFPS {
			t.Errorf("%s: video to the receiver %.0f kb/s at %.1f fps against one CUBIC flow, guard: at least %d kb/s and %d fps",
				name, w.VideoKbps, fps, guardOneFlowKb, guardOneFlowFPS)
		}
	}
	if ten {
		issueTarget(t, fps >= 15 && onLowest >= len(win)*9/10, 22,
			"%s: stage decoded at %.1f fps, forwarded and playing in %d of %d samples, against ten CUBIC flows: want at least the lowest layer at 15 fps",
			name, fps, onLowest, len(win))
		issueTarget(t, w.AudioLoss < 0.01, 22, "%s: audio loss %.2f %% (concealed samples; packets lost %.2f %%) against ten CUBIC flows, want under 1 %%",
			name, 100*w.AudioLoss, 100*w.PacketLoss)
		if fps < guardTenFPS || onLowest < len(win)*8/10 || w.AudioLoss >= guardTenAudioLoss {
			t.Errorf("%s: stage decoded at %.1f fps, forwarded and playing in %d of %d samples, audio loss %.2f %% against ten CUBIC flows; "+
				"guard: %d fps, 80 %% of samples, audio loss under %.0f %%", name, fps, onLowest, len(win), 100*w.AudioLoss, guardTenFPS, 100*guardTenAudioLoss)
		}
	}
}

// recovered checks that the flows' end brought the receiver's layers from
// before any flow back within shareRecovery (waiting up to twice that, for the
// figure).
func (s *shareRun) recovered(name string, stopped time.Time, stage, other int) {
	s.t.Helper()
	took, ok := s.backOn(stopped, stage, other, guardRecovery)
	s.figure("ADAPTATION scenario=tcp-share phase=%s-recovery previous_layers=%d/%d back_after=%s back=%v", name, stage, other, secs(took), ok)
	issueTarget(s.t, ok && took <= shareRecovery, 22, "%s: back on the previous layers (stage %d, other %d) %s after the flows stopped (found %v), want within %v",
		name, stage, other, secs(took), ok, shareRecovery)
	if !ok && stage > 0 {
		// The guard: the stage climbed off its lowest encoding, i.e. the
		// estimate came back. The top layer itself is the 5 s target above:
		// an upgrade to it can be undone by its own keyframe burst into the
		// 100 ms queue (seen in 1 of 4 recoveries in CI, the stage then on
		// 360p at 3+ Mb/s), which no guard here should turn red.
		if _, up := s.s.Samples().Until(stopped, func(v videoSample) bool { return v.Encoding >= 1 }); !up {
			s.t.Errorf("%s: the stage never left its lowest encoding within %v after the flows stopped (previous: stage %d, other %d); guard: off the lowest within %v",
				name, guardRecovery, stage, other, guardRecovery)
		}
	} else if !ok {
		s.t.Errorf("%s: not back on the previous layers (stage %d, other %d) %s after the flows stopped; guard: within %v",
			name, stage, other, secs(took), guardRecovery)
	}
}

// TestAdaptationTCPShare runs the three patterns of competing CUBIC flows in
// turn, then one BBR flow, against the same receiver and senders (~7 min).
func TestAdaptationTCPShare(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: browsers behind a shaped link, competing TCP")
	}
	link := newShapedLink(t)
	srv := startServerReachableFrom(t, link)
	farm := startIperfFarm(t, link)
	link.capWithQueue(shareLinkKbps, shareQueue)

	room := "e2e-tcp-share"
	base := srv.URL() + room + "?name="
	red720, green720 := highEntropyCamera(t, red, 1280, 720), highEntropyCamera(t, green, 1280, 720)
	stageB := launch(t, "Stage", secureOrigin(srv), red720)
	stage := who{"Stage", stageB.join(base, "Stage"), red}
	otherB := launch(t, "Other", secureOrigin(srv), green720)
	other := who{"Other", otherB.join(base, "Other"), green}
	receiver := launchIn(t, link, "Receiver")
	receiver.join(base, "Receiver")
	if err := receiver.eval(fmt.Sprintf(`window.podium.stage(%q); true`, stage.ID), nil); err != nil {
		t.Fatal(err)
	}
	within(t, "the receiver's tiles show the stage (red) and the other sender (green)", 30*time.Second,
		func() (bool, string) { return showsWho(receiver, stage, other) })

	r := &rig{t: t, srv: srv, room: room, link: link, receiver: receiver, senderID: stage.ID, start: time.Now()}
	r.s = startSampler(t, receiver, stage.ID)
	s := &shareRun{rig: r, other: other.ID, farm: farm}
	s.setPhase("ramp-up", 0)
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { defer close(done); s.sampleLoop(stop) }()
	defer func() { close(stop); <-done }()

	// Settled: the stage decodes at 20 fps or more and the SFU's choice has not
	// changed for 5 s (high-entropy 720p does not always fit the top layer into 4 Mb/s).
	took, ok := r.s.Await(60*time.Second, func(ss videoSamples) bool {
		now := time.Now()
		from := now.Add(-5 * time.Second)
		w := ss.Window(from, now)
		if ss.Span(from, now) < 4500*time.Millisecond || ss.MeanFPS(from, now) < 20 {
			return false
		}
		for _, v := range w {
			if !v.OK || v.Encoding < 0 || v.Encoding != w[0].Encoding {
				return false
			}
		}
		return true
	})
	if !ok {
		t.Fatalf("stage video not settled within %v: %s", took, r.s.Samples().Summary(r.start, time.Time{}))
	}
	t.Logf("settled %v after joining: %s", took.Round(100*time.Millisecond), r.s.Samples().Summary(time.Now().Add(-5*time.Second), time.Time{}))

	// Alone: the queue the SFU's own traffic builds.
	s.setPhase("alone", 0)
	alone := time.Now()
	time.Sleep(20 * time.Second)
	w := s.window(alone, time.Now())
	s.phaseFigures("alone", alone, time.Now(), false, false)
	issueTarget(t, w.QueueP95 <= shareQueueP95, 22, "alone: the 95th percentile of the queue at the 4 Mb/s bottleneck is %v, want under %v", w.QueueP95, shareQueueP95)
	if w.QueueP95 > guardQueueP95 {
		t.Errorf("alone: the 95th percentile of the queue at the 4 Mb/s bottleneck is %v; guard: under %v", w.QueueP95, guardQueueP95)
	}

	// waitAll waits for every flow's end.
	waitAll := func(chs []<-chan struct{}) {
		for _, c := range chs {
			<-c
		}
	}

	// The layers every pattern must come back to within shareRecovery of its
	// flows' end: those of the receiver alone (a pattern that starts before
	// the last one's recovery, or while the video is suspended, must not lower
	// the bar).
	st, ot := s.layers(10 * time.Second)

	// (i) One flow for 60 s, then ten together for 20 s.
	s.setPhase("i-one", 1)
	start := time.Now()
	flows := []<-chan struct{}{farm.flow(0, "cubic", 80*time.Second)}
	time.Sleep(60 * time.Second)
	s.phaseFigures("i-one-cubic", start, time.Now(), true, false)
	s.setPhase("i-ten", shareFlows)
	tenFrom := time.Now()
	for i := 1; i < shareFlows; i++ {
		flows = append(flows, farm.flow(i, "cubic", 20*time.Second))
	}
	waitAll(flows)
	stopped := time.Now()
	s.phaseFigures("i-ten-cubic", tenFrom.Add(3*time.Second), stopped, false, true)
	s.setPhase("i-after", 0)
	s.recovered("i", stopped, st, ot)
	time.Sleep(5 * time.Second)

	// (ii) Ten flows started 10 s apart, all ending together 10 s after the last start.
	s.setPhase("ii-staggered", 1)
	start = time.Now()
	flows = nil
	for i := range shareFlows {
		if i > 0 {
			time.Sleep(time.Until(start.Add(time.Duration(i) * 10 * time.Second)))
			s.setPhase("ii-staggered", i+1)
		}
		flows = append(flows, farm.flow(i, "cubic", time.Duration(shareFlows-i)*10*time.Second))
	}
	waitAll(flows)
	stopped = time.Now()
	s.phaseFigures("ii-first-flow", start, start.Add(10*time.Second), false, false)
	s.phaseFigures("ii-two-to-ten-flows", start.Add(10*time.Second), stopped, false, true)
	s.phaseFigures("ii-ten-flows", start.Add(90*time.Second), stopped, false, true)
	s.setPhase("ii-after", 0)
	s.recovered("ii", stopped, st, ot)
	time.Sleep(5 * time.Second)

	// (iii) Ten flows on for 20 s, off for 20 s, twice.
	for cycle := 1; cycle <= 2; cycle++ {
		name := fmt.Sprintf("iii-on-%d", cycle)
		s.setPhase(name, shareFlows)
		on := time.Now()
		flows = nil
		for i := range shareFlows {
			flows = append(flows, farm.flow(i, "cubic", 20*time.Second))
		}
		waitAll(flows)
		stopped = time.Now()
		s.phaseFigures(name+"-cubic", on.Add(3*time.Second), stopped, false, true)
		s.setPhase(fmt.Sprintf("iii-off-%d", cycle), 0)
		s.recovered(name, stopped, st, ot)
		time.Sleep(time.Until(stopped.Add(20 * time.Second)))
	}

	// BBR, the kernel's default: one flow for 30 s, reported, not judged.
	s.setPhase("bbr-one", 1)
	start = time.Now()
	<-farm.flow(0, "bbr", 30*time.Second)
	s.phaseFigures("bbr-one", start.Add(3*time.Second), time.Now(), false, false)
	s.setPhase("bbr-after", 0)
	time.Sleep(5 * time.Second)

	within(t, "the receiver's tiles still show the stage (red) and the other sender (green)", 10*time.Second,
		func() (bool, string) { return showsWho(receiver, stage, other) })
	t.Logf("SFU downlink to the receiver: %s; the link: %s", r.downlink(), link.Qdiscs())
	if dir := os.Getenv("PODIUM_ADAPTATION_DIR"); dir != "" {
		if err := s.write(dir); err != nil {
			t.Errorf("writing the samples: %v", err)
		}
	}
}

// write saves the per-second rows as tcp-share.csv and, per pattern, a plot of
// Podium's video against the TCP goodput (tcp-share-<pattern>.svg).
func (s *shareRun) write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	rows, _ := s.snapshot()
	ss := s.s.Samples()
	var csv strings.Builder
	csv.WriteString("t_s,phase,tcp_flows,tcp_kbps,video_kbps,stage_kbps,stage_encoding,other_encoding,stage_height,stage_fps,stage_frozen_s,audio_lost,audio_received,audio_samples,audio_concealed,queue_ms,estimate_kbps\n")
	type series struct{ t, video, tcp, est, enc, fps []float64 }
	patterns := map[string]*series{}
	for i := 1; i < len(rows); i++ {
		a, b := rows[i-1], rows[i]
		d := b.At.Sub(a.At).Seconds()
		video := float64(b.VideoBytes-a.VideoBytes) * 8 / 1000 / d
		tcp := float64(b.TCPBytes-a.TCPBytes) * 8 / 1000 / d
		stageKbps := ss.Bitrate(a.At, b.At)
		fps := ss.MeanFPS(a.At, b.At)
		h, frozen := 0, 0.0
		if w := ss.Window(a.At, b.At); len(w) > 0 {
			h, frozen = w[len(w)-1].Height, w[len(w)-1].FreezeSeconds
		}
		ts := b.At.Sub(s.start).Seconds()
		fmt.Fprintf(&csv, "%.1f,%s,%d,%.0f,%.0f,%.0f,%d,%d,%d,%.1f,%.1f,%d,%d,%d,%d,%.1f,%d\n", ts, b.Phase, b.Flows, tcp, video, stageKbps,
			b.StageEnc, b.OtherEnc, h, fps, frozen, b.AudioLos, b.AudioRecv, b.AudioSamples, b.AudioConcealed, b.QueueMS, b.Estimate/1000)
		p := strings.SplitN(b.Phase, "-", 2)[0]
		if p == "alone" || p == "ramp" {
			continue
		}
		if patterns[p] == nil {
			patterns[p] = &series{}
		}
		x := patterns[p]
		x.t, x.video, x.tcp, x.est = append(x.t, ts), append(x.video, video/1000), append(x.tcp, tcp/1000), append(x.est, float64(b.Estimate)/1e6)
		x.enc, x.fps = append(x.enc, float64(b.StageEnc)), append(x.fps, fps/10)
	}
	s.mu.Lock()
	summary := strings.Join(s.figures, "\n") + "\n"
	s.mu.Unlock()
	files := map[string][]byte{"tcp-share.csv": []byte(csv.String()), "tcp-share.txt": []byte(summary)}
	titles := map[string]string{
		"i":   "(i) one CUBIC flow for 60 s, then ten for 20 s",
		"ii":  "(ii) ten CUBIC flows started 10 s apart",
		"iii": "(iii) ten CUBIC flows on/off every 20 s",
		"bbr": "one BBR flow for 30 s",
	}
	for p, x := range patterns {
		var ticks []float64 // every 10 s: one per sample would crowd the axis
		for v := math.Ceil(x.t[0]/10) * 10; v <= x.t[len(x.t)-1]; v += 10 {
			ticks = append(ticks, v)
		}
		rate := bench.Chart{Title: titles[p] + ": 4 Mb/s link", XLabel: "time since join (s)", YLabel: "Mb/s", XTicks: ticks,
			Series: []bench.Series{{Name: "Podium video to the receiver", X: x.t, Y: x.video}, {Name: "TCP goodput", X: x.t, Y: x.tcp},
				{Name: "SFU estimate", X: x.t, Y: x.est}}}
		layer := bench.Chart{Title: titles[p] + ": stage video", XLabel: "time since join (s)", YLabel: "encoding (0 q, 1 h, 2 f) · fps / 10", XTicks: ticks,
			Series: []bench.Series{{Name: "SFU encoding of the stage", X: x.t, Y: x.enc}, {Name: "decoded fps / 10", X: x.t, Y: x.fps}}}
		files["tcp-share-"+p+"-rate.svg"] = rate.SVG()
		files["tcp-share-"+p+"-layer.svg"] = layer.SVG()
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// iperf3's interval lines, as its server prints them, parsed into bytes.
func TestIperfIntervalParse(t *testing.T) {
	for _, c := range []struct {
		line string
		want int64
		ok   bool
	}{
		{"[  5]   1.00-2.00   sec   448 KBytes  3.67 Mbits/sec", 448 << 10, true},
		{"[  5]   0.00-1.00   sec  1.25 MBytes  10.5 Mbits/sec", 1310720, true},
		{"[  5]   3.00-4.00   sec  0.00 Bytes  0.00 bits/sec", 0, true},
		{"[  5]   0.00-10.04  sec  4.50 MBytes  3.76 Mbits/sec                  receiver", 0, false},
		{"Accepted connection from 10.213.0.1, port 40000", 0, false},
		{"[ ID] Interval           Transfer     Bitrate", 0, false},
	} {
		got, ok := iperfBytes(c.line)
		if got != c.want || ok != c.ok {
			t.Errorf("iperfBytes(%q) = %d %v, want %d %v", c.line, got, ok, c.want, c.ok)
		}
	}
}
