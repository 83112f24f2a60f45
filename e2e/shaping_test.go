//go:build linux

package e2e

import (
	"fmt"
	"math"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Shaping acts on the egress of the link's host end: what the server sends to the
// namespaced browser (its downlink). Its uplink is never shaped.
//
// Rate cap: tbf, the token bucket of a home link's shaper.
//   - burst = max(1600 B, 10 ms at the rate): one full-size packet (1514 B on the
//     wire plus slack) at low rates, 10 ms of line time at high ones — real shapers
//     (DOCSIS, DSL BRAS) allow a few ms of line-rate burst; more would let a
//     keyframe through faster than the cap and hide it from the estimator.
//   - queue = 200 ms at the rate (tbf limit = burst + rate × 200 ms), but never
//     under four full-size packets. Access links buffer 100 ms to well over 1 s
//     (bufferbloat); 200 ms is a modest one. It matters for what the tests see: an
//     overshoot first grows the queue — delay, which the receiver's delay-based
//     estimator (GCC's trendline) is built to catch — and only a persisting one is
//     dropped, as on a real link; a tiny queue would turn every burst into loss,
//     a huge one would make each step take many seconds to drain. The floor keeps
//     one keyframe's burst at 128 kb/s from being cut off outright (a real link of
//     that speed buffers in packets, far more than 200 ms).
//
// Loss: a classic-BPF classifier on the egress clsact hook that drops each IP
// packet with the given probability (ld rand; jge; ret SHOT / OK). Not netem:
// the VM kernel these tests were written on (6.18, built without
// CONFIG_NET_SCH_NETEM) lacks it, while cls_bpf and clsact are there as in every
// distribution kernel. It drops before the cap's queue: loss on the way to the
// bottleneck, independent of it.
//
// Delay, jitter and loss in bursts come from a userspace relay on the media path
// (internal/netem; behindRelay in relay_test.go): the kernel has no netem.
// Without it the link's RTT is a veth's (~0.1 ms), so retransmissions come back
// far faster than over any real network.

const (
	mtuOnWire     = 1514 // Ethernet frame of a 1500-byte packet: what tbf counts
	queueTime     = 200 * time.Millisecond
	uncappedKbps  = 1_000_000 // Uncap: 1 Gb/s, far above any WebRTC stream
	lossFilterPri = "1"
	capKbps       = 300 // TestShapedReceiverSeesVideo's cap
)

// Cap limits the downlink to kbps kb/s (tbf, replaced in place when one is there:
// queued packets survive a change of rate).
func (l *Link) Cap(kbps int) {
	l.t.Helper()
	if kbps <= 0 {
		l.t.Fatalf("Cap(%d): want a positive rate; Uncap lifts the cap", kbps)
	}
	l.applyRoot(kbps)
	l.capped = true
}

// Uncap lifts the cap as a link whose congestion ends does: the tbf stays, at
// 1 Gb/s, so its queue drains instead of being thrown away (deleting the qdisc
// would drop up to 200 ms of packets at the moment of the lift).
func (l *Link) Uncap() {
	l.t.Helper()
	if l.capped {
		l.applyRoot(uncappedKbps)
	}
}

// Loss drops each packet sent to the namespace with probability percent/100;
// 0 stops dropping.
func (l *Link) Loss(percent float64) {
	l.t.Helper()
	if percent <= 0 {
		l.tcQuiet("filter", "del", "dev", l.HostDev, "egress", "pref", lossFilterPri)
		return
	}
	if percent > 100 {
		l.t.Fatalf("Loss(%v): over 100 %%", percent)
	}
	l.run(l.tc, "qdisc", "replace", "dev", l.HostDev, "clsact")
	l.run(l.tc, "filter", "replace", "dev", l.HostDev, "egress", "pref", lossFilterPri, "handle", "1",
		"protocol", "ip", "bpf", "da", "bytecode", lossBytecode(percent))
}

// lossBytecode is a classic BPF program for tc's cls_bpf in direct-action mode:
// A = random u32; if A >= threshold return TC_ACT_OK (0) else TC_ACT_SHOT (2).
func lossBytecode(percent float64) string {
	threshold := uint32(math.Min(percent/100*(1<<32), math.MaxUint32))
	const (
		ldAbsW     = 0x20       // BPF_LD | BPF_W | BPF_ABS
		skfRandom  = 0xfffff038 // SKF_AD_OFF + SKF_AD_RANDOM
		jgeK       = 0x35       // BPF_JMP | BPF_JGE | BPF_K
		retK       = 0x06       // BPF_RET | BPF_K
		tcActOK    = 0
		tcActShoot = 2
	)
	return fmt.Sprintf("4,%d 0 0 %d,%d 1 0 %d,%d 0 0 %d,%d 0 0 %d",
		ldAbsW, uint32(skfRandom), jgeK, threshold, retK, tcActShoot, retK, tcActOK)
}

// Clear removes the cap and the loss. Packets queued under a cap are dropped;
// Uncap drains them instead.
func (l *Link) Clear() {
	l.t.Helper()
	l.tcQuiet("qdisc", "del", "dev", l.HostDev, "clsact")
	l.tcQuiet("qdisc", "del", "dev", l.HostDev, "root")
	l.capped = false
}

// applyRoot installs (or changes in place) the root tbf at kbps.
func (l *Link) applyRoot(kbps int) {
	l.t.Helper()
	l.run(l.tc, append([]string{"qdisc", "replace", "dev", l.HostDev, "root", "handle", "1:"}, tbfArgs(kbps)...)...)
}

// tbfArgs: the token bucket for kbps (see the comment at the top).
func tbfArgs(kbps int) []string {
	bytesPerSec := int64(kbps) * 1000 / 8
	burst := max(1600, bytesPerSec/100)
	limit := max(burst+bytesPerSec*int64(queueTime)/int64(time.Second), 4*mtuOnWire)
	return []string{"tbf", "rate", strconv.Itoa(kbps) + "kbit", "burst", strconv.FormatInt(burst, 10), "limit", strconv.FormatInt(limit, 10)}
}

// tcQuiet runs tc for a removal that may find nothing to remove.
func (l *Link) tcQuiet(args ...string) { _ = exec.Command(l.tc, args...).Run() }

// Qdiscs is `tc -s qdisc show` of the host end, for logs.
func (l *Link) Qdiscs() string {
	out, _ := exec.Command(l.tc, "-s", "qdisc", "show", "dev", l.HostDev).CombinedOutput()
	return strings.TrimSpace(string(out))
}

// A 720p simulcast sender on the host and a receiver behind a shaped link: the
// receiver decodes the sender's video, above 600 kb/s once the SFU's estimate has
// ramped up; capping its downlink at 300 kb/s brings the video it receives under
// ~350 kb/s (the shaping is in the path); once the cap is cleared, it is back
// above 600 kb/s within 10 s. How the SFU adapts in between is logged, not
// judged: the scenario tests do that.
func TestShapedReceiverSeesVideo(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: browsers behind a shaped link")
	}
	link := newShapedLink(t) // before the server: its media port binds the link's address
	srv := startServerReachableFrom(t, link)
	base := srv.URL() + "e2e-shaped?name="
	sender := launch(t, "Sender", secureOrigin(srv))
	senderID := sender.join(base, "Sender")
	receiver := launchIn(t, link, "Receiver")
	receiver.join(base, "Receiver")
	joined := time.Now()
	s := startSampler(t, receiver, senderID)

	// The SFU starts low and ramps up with its estimate; Chromium may scale the
	// 720p encoding down when two browsers share two cores, so the rate is judged,
	// not the size: over the last 2 s, decoding, and at twice the cap.
	flowing := func(ss videoSamples) bool {
		now := time.Now()
		from := now.Add(-2 * time.Second)
		return ss.Span(from, now) >= 1700*time.Millisecond && ss.MeanFPS(from, now) >= 10 && ss.Bitrate(from, now) >= 2*capKbps
	}
	took, ok := s.Await(20*time.Second, flowing)
	if !ok {
		t.Fatalf("receiver not at %d kb/s within %v of joining: %s", 2*capKbps, took, s.Samples().Summary(joined, time.Time{}))
	}
	end := time.Now()
	unshaped := s.Samples()
	before := unshaped.Bitrate(end.Add(-2*time.Second), end)
	t.Logf("unshaped, %v after joining: %s", took.Round(time.Millisecond), unshaped.Summary(end.Add(-2*time.Second), end))

	capped := time.Now()
	link.Cap(capKbps)
	time.Sleep(4 * time.Second) // 1 s for the queue to fill and the overshoot to drain, 3 s measured
	end = time.Now()
	after := s.Samples().Bitrate(end.Add(-3*time.Second), end)
	t.Logf("capped at %d kb/s: %s", capKbps, s.Samples().Summary(end.Add(-3*time.Second), end))
	t.Logf("%s", link.Qdiscs())
	if after > 350 {
		t.Errorf("video received at %.0f kb/s over 3 s under a %d kb/s cap (%.0f kb/s before): the shaping is not in the path", after, capKbps, before)
	}

	link.Clear()
	took, ok = s.Await(10*time.Second, flowing)
	all := s.Stop()
	t.Logf("cleared: decoding above %d kb/s again: %v after %v; since the cap: %s; the downlink: %s", 2*capKbps, ok, took.Round(time.Millisecond),
		all.Summary(capped, time.Time{}), downlinkJSON(srv.URL(), "e2e-shaped", "Receiver"))
	if !ok {
		t.Errorf("video not back above %d kb/s at 10 fps or more within %v of clearing the cap: %s; from the cap:%s",
			2*capKbps, took.Round(time.Millisecond), all.Summary(time.Now().Add(-3*time.Second), time.Time{}),
			all.Timeline(capped, time.Time{}))
	}
}

// udpProbe receives datagrams inside a link's namespace, counting them.
type udpProbe struct {
	conn *net.UDPConn
	done chan struct{}

	mu           sync.Mutex
	n            int
	bytes        int
	first, last  time.Time
	firstPayload int
}

func listenInNS(t *testing.T, l *Link) *udpProbe {
	t.Helper()
	p := &udpProbe{done: make(chan struct{})}
	err := l.inNS(func() error {
		var err error
		p.conn, err = net.ListenUDP("udp4", &net.UDPAddr{IP: l.NSIP.AsSlice()})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	_ = p.conn.SetReadBuffer(4 << 20)
	go func() {
		defer close(p.done)
		buf := make([]byte, 2048)
		for {
			n, err := p.conn.Read(buf)
			if err != nil {
				return
			}
			now := time.Now()
			p.mu.Lock()
			if p.n == 0 {
				p.first, p.firstPayload = now, n
			}
			p.n++
			p.bytes += n
			p.last = now
			p.mu.Unlock()
		}
	}()
	t.Cleanup(func() { _ = p.conn.Close(); <-p.done })
	return p
}

// reset zeroes the counts; take waits until nothing arrived for 300 ms and returns
// them, with the payload rate between the first and the last datagram (kb/s).
func (p *udpProbe) reset() {
	p.mu.Lock()
	p.n, p.bytes = 0, 0
	p.mu.Unlock()
}

func (p *udpProbe) take() (n int, kbps float64) {
	for {
		time.Sleep(300 * time.Millisecond)
		p.mu.Lock()
		quiet := time.Since(p.last) >= 300*time.Millisecond
		n, bytes, span := p.n, p.bytes-p.firstPayload, p.last.Sub(p.first)
		p.mu.Unlock()
		if quiet {
			if span > 0 {
				kbps = float64(bytes) * 8 / 1000 / span.Seconds()
			}
			return n, kbps
		}
	}
}

// send writes count datagrams of size bytes to addr at kbps (payload), in 1 ms steps.
func send(t *testing.T, to *net.UDPConn, count, size, kbps int) {
	t.Helper()
	payload := make([]byte, size)
	perMs := float64(kbps) * 1000 / 8 / 1000 / float64(size)
	start := time.Now()
	for sent := 0; sent < count; {
		due := min(count, int(perMs*float64(time.Since(start).Milliseconds()+1)))
		for ; sent < due; sent++ {
			if _, err := to.Write(payload); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(time.Millisecond)
	}
}

// The link's shaping, measured with plain UDP (no browser): Loss drops its share,
// Cap holds the rate, Uncap and Clear let everything through.
func TestShapedLinkCapsAndDrops(t *testing.T) {
	link := newShapedLink(t)
	probe := listenInNS(t, link)
	to, err := net.DialUDP("udp4", nil, probe.conn.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer to.Close()

	link.Loss(10)
	send(t, to, 4000, 100, 4000)
	n, _ := probe.take()
	if got := 1 - float64(n)/4000; got < 0.07 || got > 0.13 { // ±3 %: over 6 standard deviations
		t.Errorf("Loss(10): %.1f %% lost, want 10 %%", got*100)
	}
	t.Logf("Loss(10): %d of 4000 lost", 4000-n)

	link.Loss(0)
	link.Cap(500)
	probe.reset()
	send(t, to, 300, 1000, 2000) // 1.2 s at 4× the cap
	n, kbps := probe.take()
	want := 500.0 * 1000 / (1000 + 42) // payload share of the Ethernet frames tbf counts
	if kbps < 0.85*want || kbps > 1.1*want {
		t.Errorf("Cap(500): payload at %.0f kb/s, want %.0f", kbps, want)
	}
	t.Logf("Cap(500): %d of 300 delivered at %.0f kb/s payload (%.0f kb/s on the wire)", n, kbps, kbps*1042/1000)

	link.Uncap()
	probe.reset()
	send(t, to, 1000, 1000, 20000)
	n, kbps = probe.take()
	if n < 990 || kbps < 10000 {
		t.Errorf("Uncap: %d of 1000 delivered at %.0f kb/s, want all at ~20 Mb/s", n, kbps)
	}
	t.Logf("Uncap: %d of 1000 delivered at %.0f kb/s", n, kbps)

	link.Cap(200)
	link.Loss(50)
	link.Clear()
	if q := link.Qdiscs(); strings.Contains(q, "tbf") || strings.Contains(q, "clsact") {
		t.Errorf("Clear left: %s", q)
	}
	probe.reset()
	send(t, to, 1000, 1000, 20000)
	if n, kbps = probe.take(); n < 990 {
		t.Errorf("Clear: %d of 1000 delivered at %.0f kb/s, want all", n, kbps)
	}
}
