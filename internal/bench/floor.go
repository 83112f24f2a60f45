package bench

import (
	"bufio"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/podium-sfu/podium/internal/load"
)

// The floor: what forwarding a scenario costs at the least on this machine,
// measured by replaying the scenario's egress pattern (FloorPlan) from a
// minimal forwarder (floorForwarder) in a child process, to receivers of the
// same kind as the load generator's (one UDP socket per receiving participant,
// a goroutine blocking on it and waking per datagram, decrypting each packet).
// The parent plays the publishers: on a 1 ms grid it sends each frame that is
// due, its packets back to back, sealed with AES-128-GCM.

// FloorCommand makes the command that runs the forwarder child; see FloorChildMain.
type FloorCommand func() *exec.Cmd

// SelfFloorCommand runs this executable as `podium bench floorfwd`.
func SelfFloorCommand() *exec.Cmd {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	return exec.Command(exe, "bench", "floorfwd")
}

// FloorChildConfig is the child's first input line.
type FloorChildConfig struct {
	FloorConfig
	Procs int `json:"procs"` // GOMAXPROCS (0: unchanged)
}

// FloorStats is the child's answer to "stats".
type FloorStats struct {
	Forwarded  uint64 `json:"forwarded"` // packet × destination
	Bytes      uint64 `json:"bytes"`     // their RTP bytes (12-byte header + payload), as the SFU's meter counts
	Datagrams  uint64 `json:"datagrams"`
	Messages   uint64 `json:"messages"` // sendmmsg messages: a GSO train or a lone datagram
	SendCalls  uint64 `json:"send_calls"`
	Wakeups    uint64 `json:"wakeups"`
	Dropped    uint64 `json:"dropped"` // messages the socket refused
	Bad        uint64 `json:"bad"`     // ingress packets that failed to open
	Mallocs    uint64 `json:"mallocs"`
	NumGC      uint32 `json:"num_gc"`
	PauseMaxNs uint64 `json:"pause_max_ns"`
}

type floorHello struct {
	Addr string `json:"addr"`
	PID  int    `json:"pid"`
}

// FloorChildMain is the forwarder child: `podium bench floorfwd`. It reads a
// FloorChildConfig line, prints {"addr","pid"}, forwards, and answers "stats"
// lines with FloorStats until in ends.
func FloorChildMain(in io.Reader, out io.Writer) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	if !sc.Scan() {
		return errors.New("floor: no configuration")
	}
	var cfg FloorChildConfig
	if err := json.Unmarshal(sc.Bytes(), &cfg); err != nil {
		return fmt.Errorf("floor: configuration: %w", err)
	}
	if cfg.Procs > 0 {
		runtime.GOMAXPROCS(cfg.Procs)
	}
	f, err := newFloorForwarder(cfg.FloorConfig)
	if err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { defer close(done); f.run() }()
	enc := json.NewEncoder(out)
	if err := enc.Encode(floorHello{Addr: f.Addr(), PID: os.Getpid()}); err != nil {
		return err
	}
	var lastGC uint32
	for sc.Scan() {
		var reply any = map[string]string{"error": fmt.Sprintf("unknown command %q", sc.Text())}
		if strings.TrimSpace(sc.Text()) == "stats" {
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			s := FloorStats{Forwarded: f.forwarded.Load(), Bytes: f.bytes.Load(), Datagrams: f.datagrams.Load(),
				Messages: f.messages.Load(), SendCalls: f.sendCalls.Load(), Wakeups: f.wakeups.Load(), Dropped: f.dropped.Load(), Bad: f.badPackets.Load(),
				Mallocs: ms.Mallocs, NumGC: ms.NumGC, PauseMaxNs: pauseMaxSince(&ms, &lastGC)}
			reply = s
		}
		if err := enc.Encode(reply); err != nil {
			break
		}
	}
	_ = f.Close()
	<-done
	return nil
}

// FloorOptions configure a floor run.
type FloorOptions struct {
	Scenario string         // a load.StandardScenario name
	Custom   *load.Scenario // instead of Scenario
	Warmup   time.Duration
	Duration time.Duration
	Command  FloorCommand // nil: this executable's `bench floorfwd`
	Procs    int          // the forwarder's GOMAXPROCS (0: 1, one goroutine needs one)
	Seed     uint64
	Progress io.Writer
	// record keeps every received packet's payload size (tests).
	record bool
}

// FloorResult are the figures of a floor run.
type FloorResult struct {
	Scenario string
	Window   time.Duration

	Forwarded, Bytes       uint64
	PacketsPerS, MbitPerS  float64
	CPUMicros              float64 // forwarder CPU per forwarded packet: user + system
	UserMicros, SysMicros  float64
	CPUPercent             float64
	StealPercent           float64 // of the machine's busy CPU time, over the window (ForwardResult.StealPercent)
	AllocsPerPacket        float64
	DatagramsPerSend       float64 // datagrams per sendmmsg call
	DatagramsPerMessage    float64 // datagrams per message: the GSO trains' length
	PacketsPerWakeup       float64 // forwarded packets per netpoller wake-up
	RSS                    uint64
	LossPercent            float64 // forwarded but not received (or refused by the socket), whole run
	Received, SentEgress   uint64  // whole run, for LossPercent
	ReceivedByDest         []map[uint32]*floorCount
	planReceivers, streams int
	totals                 floorTotals
}

// floorCount is what one receiver got of one stream.
type floorCount struct {
	Packets, Bytes uint64
	Sizes          map[int]int // payload size → packets (recorded runs only)
}

// Line is the floor's figures as key=value pairs.
func (r FloorResult) Line() string {
	return fmt.Sprintf("floor_us_per_pkt=%.2f floor_user_us_per_pkt=%.2f floor_sys_us_per_pkt=%.2f floor_pkts_per_s=%.0f floor_mbit_per_s=%.2f "+
		"floor_loss_pct=%.3f floor_allocs_per_pkt=%.4f floor_pkts_per_wakeup=%.1f floor_datagrams_per_send=%.1f floor_datagrams_per_message=%.2f floor_rss_mb=%.1f floor_steal_pct=%.1f",
		r.CPUMicros, r.UserMicros, r.SysMicros, r.PacketsPerS, r.MbitPerS, r.LossPercent, r.AllocsPerPacket,
		r.PacketsPerWakeup, r.DatagramsPerSend, r.DatagramsPerMessage, float64(r.RSS)/(1<<20), r.StealPercent)
}

// Summary describes the floor for people.
func (r FloorResult) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "floor                %.2f µs per forwarded packet (user %.2f, system %.2f); %.1f %% of a core; host steal %.1f %%\n",
		r.CPUMicros, r.UserMicros, r.SysMicros, r.CPUPercent, r.StealPercent)
	fmt.Fprintf(&b, "  replayed           %.0f packets/s, %.2f Mbit/s; %.1f packets per wake-up, %.1f datagrams per sendmmsg, %.2f per message; loss %.3f %%; %.4f allocations per packet; RSS %.1f MB\n",
		r.PacketsPerS, r.MbitPerS, r.PacketsPerWakeup, r.DatagramsPerSend, r.DatagramsPerMessage, r.LossPercent, r.AllocsPerPacket, float64(r.RSS)/(1<<20))
	return b.String()
}

// Floor runs the floor of a scenario: the forwarder child, the receivers and
// the publishers' replay, a warm-up, then the measured window.
func Floor(ctx context.Context, o FloorOptions) (FloorResult, error) {
	res := FloorResult{Scenario: o.Scenario}
	var sc load.Scenario
	if o.Custom != nil {
		sc, res.Scenario = *o.Custom, o.Custom.Name
	} else {
		var err error
		if sc, err = load.StandardScenario(o.Scenario); err != nil {
			return res, err
		}
	}
	plan, err := NewFloorPlan(sc, o.Seed)
	if err != nil {
		return res, err
	}
	cfg := FloorChildConfig{Procs: o.Procs, FloorConfig: FloorConfig{Key: newKey()}}
	if cfg.Procs == 0 {
		cfg.Procs = 1
	}
	for _, s := range plan.Streams {
		dests := make([]int32, len(s.Dests))
		for i, d := range s.Dests {
			dests[i] = int32(d)
		}
		cfg.Streams = append(cfg.Streams, dests)
	}
	recvs := make([]*floorReceiver, len(plan.Receivers))
	defer func() {
		for _, r := range recvs {
			if r != nil {
				r.close()
			}
		}
	}()
	for i := range plan.Receivers {
		key := newKey()
		r, err := newFloorReceiver(key, len(plan.Streams), o.record)
		if err != nil {
			return res, err
		}
		recvs[i] = r
		cfg.Dests = append(cfg.Dests, FloorDest{Addr: r.conn.LocalAddr().String(), Key: key})
	}
	child, err := startFloorChild(ctx, o.Command, cfg)
	if err != nil {
		return res, err
	}
	defer child.close()
	in, err := newGCM(cfg.Key)
	if err != nil {
		return res, err
	}
	addr, err := netip.ParseAddrPort(child.hello.Addr)
	if err != nil {
		return res, fmt.Errorf("floor forwarder: address %q: %w", child.hello.Addr, err)
	}
	pub, err := net.DialUDP("udp4", nil, net.UDPAddrFromAddrPort(addr))
	if err != nil {
		return res, err
	}
	defer pub.Close()
	stop := make(chan struct{})
	var sent atomic.Uint64 // egress packets the plan made due: packet × destination
	replayDone := make(chan struct{})
	go func() {
		defer close(replayDone)
		replay(plan, pub, in, time.Now(), 0, stop, &sent)
	}()
	stopReplay := func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		<-replayDone
	}
	defer stopReplay()
	progress(o.Progress, "floor: %d streams to %d receivers; warming up for %v\n", len(plan.Streams), len(plan.Receivers), o.Warmup)
	if err := sleep(ctx, o.Warmup); err != nil {
		return res, err
	}
	a, pa, err := child.sample()
	if err != nil {
		return res, err
	}
	if err := sleep(ctx, o.Duration); err != nil {
		return res, err
	}
	b, pb, err := child.sample()
	if err != nil {
		return res, err
	}
	stopReplay()
	// Whatever is in flight arrives within milliseconds on loopback.
	final := b
	for range 20 {
		if err := sleep(ctx, 50*time.Millisecond); err != nil {
			return res, err
		}
		if final, _, err = child.sample(); err != nil {
			return res, err
		}
		if received(recvs) >= final.Forwarded-final.Dropped {
			break
		}
	}
	res.fill(a, b, pa, pb)
	res.SentEgress, res.Received = final.Forwarded, received(recvs)
	if res.SentEgress > 0 && res.Received < res.SentEgress {
		res.LossPercent = 100 * float64(res.SentEgress-res.Received) / float64(res.SentEgress)
	}
	if want := sent.Load(); want > res.SentEgress && want > 0 { // the forwarder missed ingress
		res.LossPercent = max(res.LossPercent, 100*float64(want-res.Received)/float64(want))
	}
	for _, r := range recvs {
		r.close()
		res.ReceivedByDest = append(res.ReceivedByDest, r.counts())
	}
	res.planReceivers, res.streams = len(plan.Receivers), len(plan.Streams)
	return res, nil
}

func (r *FloorResult) fill(a, b FloorStats, pa, pb ProcStats) {
	r.totals = floorTotals{
		window: pb.At.Sub(pa.At), forwarded: b.Forwarded - a.Forwarded, bytes: b.Bytes - a.Bytes,
		user: pb.User - pa.User, sys: pb.System - pa.System, mallocs: b.Mallocs - a.Mallocs,
		datagrams: b.Datagrams - a.Datagrams, messages: b.Messages - a.Messages, calls: b.SendCalls - a.SendCalls, wakeups: b.Wakeups - a.Wakeups,
		hostBusy: pb.Host.Busy - pa.Host.Busy, hostSteal: pb.Host.Steal - pa.Host.Steal,
	}
	if pb.Host.Busy < pa.Host.Busy || pb.Host.Steal < pa.Host.Steal {
		r.totals.hostBusy, r.totals.hostSteal = 0, 0
	}
	r.RSS = pb.RSS
	r.derive()
}

// floorTotals are a floor window's counts, from which FloorResult's figures
// are derived, so that two windows can be added (MergeFloors).
type floorTotals struct {
	window              time.Duration
	forwarded, bytes    uint64
	user, sys           time.Duration
	mallocs             uint64
	datagrams, messages uint64
	calls, wakeups      uint64
	hostBusy, hostSteal uint64
}

func (r *FloorResult) derive() {
	t := &r.totals
	r.Window, r.Forwarded, r.Bytes = t.window, t.forwarded, t.bytes
	sec := t.window.Seconds()
	if sec <= 0 {
		return
	}
	r.PacketsPerS = float64(t.forwarded) / sec
	r.MbitPerS = float64(t.bytes) * 8 / sec / 1e6
	r.CPUPercent = 100 * float64(t.user+t.sys) / float64(t.window)
	r.StealPercent = StealPercent(HostCPU{}, HostCPU{Busy: t.hostBusy, Steal: t.hostSteal})
	if n := float64(t.forwarded); n > 0 {
		r.CPUMicros = float64(t.user+t.sys) / 1e3 / n
		r.UserMicros = float64(t.user) / 1e3 / n
		r.SysMicros = float64(t.sys) / 1e3 / n
		r.AllocsPerPacket = float64(t.mallocs) / n
	}
	if t.calls > 0 {
		r.DatagramsPerSend = float64(t.datagrams) / float64(t.calls)
	}
	if t.messages > 0 {
		r.DatagramsPerMessage = float64(t.datagrams) / float64(t.messages)
	}
	if t.wakeups > 0 {
		r.PacketsPerWakeup = float64(t.forwarded) / float64(t.wakeups)
	}
}

// MergeFloors is the floor over both windows of a and b (of one scenario):
// their counts added, the figures derived again; the larger RSS and the worse
// loss of the two. The receivers' per-stream counts are a's.
func MergeFloors(a, b FloorResult) FloorResult {
	m := a
	t, u := &m.totals, b.totals
	t.window += u.window
	t.forwarded += u.forwarded
	t.bytes += u.bytes
	t.user += u.user
	t.sys += u.sys
	t.mallocs += u.mallocs
	t.datagrams += u.datagrams
	t.messages += u.messages
	t.calls += u.calls
	t.wakeups += u.wakeups
	t.hostBusy += u.hostBusy
	t.hostSteal += u.hostSteal
	m.RSS = max(a.RSS, b.RSS)
	m.SentEgress, m.Received = a.SentEgress+b.SentEgress, a.Received+b.Received
	m.LossPercent = max(a.LossPercent, b.LossPercent)
	m.derive()
	return m
}

// replay plays the publishers: every 1 ms it sends the frames due (time since
// start), each frame's packets back to back, until stop or, when until > 0,
// until that much replay time has been sent. sent counts packet × destination.
func replay(plan *FloorPlan, conn *net.UDPConn, aead cipher.AEAD, start time.Time, until time.Duration, stop <-chan struct{}, sent *atomic.Uint64) {
	seqs := make([]uint16, len(plan.Streams))
	frames := make([]uint32, len(plan.Streams))
	buf := make([]byte, floorMTU)
	var nonce [12]byte
	for tick := time.Duration(0); ; tick += time.Millisecond {
		if until > 0 && tick > until {
			return
		}
		if d := time.Until(start.Add(tick)); d > 0 {
			select {
			case <-stop:
				return
			case <-time.After(d):
			}
		} else {
			select {
			case <-stop:
				return
			default:
			}
		}
		plan.Due(tick, func(stream int, payloads []int) {
			s := plan.Streams[stream]
			pt, tsStep := byte(96), uint32(3000)
			if s.Kind == "audio" {
				pt, tsStep = 111, 960
			}
			ts := frames[stream] * tsStep
			frames[stream]++
			for k, l := range payloads {
				h := buf[:rtpHeaderLen]
				h[0], h[1] = 0x80, pt
				if k == len(payloads)-1 {
					h[1] |= 0x80 // marker: the frame's last packet
				}
				binary.BigEndian.PutUint16(h[2:], seqs[stream])
				seqs[stream]++
				binary.BigEndian.PutUint32(h[4:], ts)
				binary.BigEndian.PutUint32(h[8:], s.SSRC)
				payload := buf[rtpHeaderLen : rtpHeaderLen+l]
				clear(payload)
				copy(nonce[:], h[4:12])
				copy(nonce[8:], h[2:4])
				nonce[10], nonce[11] = 0, 0
				pkt := aead.Seal(h, nonce[:], payload, h)
				if _, err := conn.Write(pkt); err == nil {
					sent.Add(uint64(len(s.Dests)))
				}
			}
		})
	}
}

// floorCounters are the forwarder's counters, read by the child's command loop.
type floorCounters struct {
	forwarded, bytes, datagrams, messages, sendCalls, wakeups, dropped, badPackets atomic.Uint64
}

func newGCM(key []byte) (cipher.AEAD, error) {
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(b)
}

func newKey() []byte {
	k := make([]byte, 16)
	_, _ = rand.Read(k)
	return k
}

// floorChild is a running forwarder child.
type floorChild struct {
	piped
	hello floorHello
	mu    sync.Mutex
}

func startFloorChild(ctx context.Context, command FloorCommand, cfg FloorChildConfig) (*floorChild, error) {
	if command == nil {
		command = SelfFloorCommand
	}
	p, err := startPiped(command(), "floor forwarder")
	if err != nil {
		return nil, err
	}
	c := &floorChild{piped: p}
	line, err := json.Marshal(cfg)
	if err == nil {
		_, err = c.in.Write(append(line, '\n'))
	}
	hello := make(chan error, 1)
	go func() {
		if !c.out.Scan() {
			hello <- fmt.Errorf("the floor forwarder exited before it was ready: %v", c.out.Err())
			return
		}
		hello <- json.Unmarshal(c.out.Bytes(), &c.hello)
	}()
	if err == nil {
		select {
		case err = <-hello:
		case <-ctx.Done():
			err = ctx.Err()
		case <-time.After(30 * time.Second):
			err = errors.New("the floor forwarder did not start within 30 s")
		}
	}
	if err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

func (c *floorChild) sample() (FloorStats, ProcStats, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var s FloorStats
	if _, err := io.WriteString(c.in, "stats\n"); err != nil {
		return s, ProcStats{}, err
	}
	if !c.out.Scan() {
		return s, ProcStats{}, fmt.Errorf("floor forwarder: no answer: %v", c.out.Err())
	}
	if err := json.Unmarshal(c.out.Bytes(), &s); err != nil {
		return s, ProcStats{}, err
	}
	p, err := ReadProc(c.hello.PID)
	return s, p, err
}

func (c *floorChild) close() {
	_ = c.in.Close()
	select {
	case <-c.waited:
	case <-time.After(10 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.waited
	}
}

// floorReceiver is one receiving participant of the replay: one UDP socket
// and a goroutine blocking on it, waking per datagram (as a pion receiver
// does), opening each packet.
type floorReceiver struct {
	conn    *net.UDPConn
	aead    cipher.AEAD
	packets []atomic.Uint64 // by SSRC-1
	bytes   []atomic.Uint64
	sizes   []map[int]int // recorded runs only; owned by the reader until done
	done    chan struct{}
	once    sync.Once
}

func newFloorReceiver(key []byte, streams int, record bool) (*floorReceiver, error) {
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, err
	}
	_ = conn.SetReadBuffer(4 << 20)
	aead, err := newGCM(key)
	if err != nil {
		conn.Close()
		return nil, err
	}
	r := &floorReceiver{conn: conn, aead: aead, packets: make([]atomic.Uint64, streams), bytes: make([]atomic.Uint64, streams), done: make(chan struct{})}
	if record {
		r.sizes = make([]map[int]int, streams)
		for i := range r.sizes {
			r.sizes[i] = map[int]int{}
		}
	}
	go r.read()
	return r, nil
}

func (r *floorReceiver) read() {
	defer close(r.done)
	buf := make([]byte, 64<<10)
	var nonce [12]byte
	const hl = rtpHeaderLen + twExtLen
	for {
		n, err := r.conn.Read(buf)
		if err != nil {
			return
		}
		p := buf[:n]
		if n < hl+gcmTagLen {
			continue
		}
		copy(nonce[:], p[4:12])
		copy(nonce[8:], p[2:4])
		nonce[10], nonce[11] = 0, 0
		payload, err := r.aead.Open(p[hl:hl], nonce[:], p[hl:], p[:hl])
		if err != nil {
			continue
		}
		ssrc := binary.BigEndian.Uint32(p[8:])
		if ssrc == 0 || int(ssrc) > len(r.packets) {
			continue
		}
		r.packets[ssrc-1].Add(1)
		r.bytes[ssrc-1].Add(uint64(len(payload)))
		if r.sizes != nil {
			r.sizes[ssrc-1][len(payload)]++
		}
	}
}

func (r *floorReceiver) close() {
	r.once.Do(func() { _ = r.conn.Close() })
	<-r.done
}

func (r *floorReceiver) total() uint64 {
	var n uint64
	for i := range r.packets {
		n += r.packets[i].Load()
	}
	return n
}

// counts is what it received by SSRC (after close).
func (r *floorReceiver) counts() map[uint32]*floorCount {
	out := map[uint32]*floorCount{}
	for i := range r.packets {
		if n := r.packets[i].Load(); n > 0 {
			c := &floorCount{Packets: n, Bytes: r.bytes[i].Load()}
			if r.sizes != nil {
				c.Sizes = r.sizes[i]
			}
			out[uint32(i+1)] = c
		}
	}
	return out
}

func received(recvs []*floorReceiver) uint64 {
	var n uint64
	for _, r := range recvs {
		n += r.total()
	}
	return n
}
