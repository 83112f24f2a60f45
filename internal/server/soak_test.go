package server

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/podium-sfu/podium/internal/client"
	"github.com/podium-sfu/podium/internal/config"
	"github.com/podium-sfu/podium/internal/signal"
)

// Soak tolerances: after the abuse stops and its connections are gone, the server
// is back where it was with the real room running, up to what comes and goes on
// its own (timers, pion's buffer pools, the race detector's bookkeeping).
const (
	soakLossLimit      = 0.005 // fraction of the real room's audio packets lost
	soakFDSlop         = 8
	soakGoroutineSlop  = 8
	soakHeapSlop       = 16 << 20 // bytes of live heap, after
	soakPeakHeapSlop   = 48 << 20 // bytes of live heap, during
	soakShortDuration  = 15 * time.Second
	soakIdleConns      = 300 // idle keep-alive connections held open, from 127.0.0.1
	soakSilentJoins    = 40  // joined sessions that never negotiate
	soakConstraintSend = 6   // sessions flooding constraints with unknown ids
	soakUDPRate        = 4000
)

// TestSoakMixedAbuse runs what the adversarial probe of issue 17 did, all at once
// for PODIUM_SOAK (default 15 s; the documented long form is PODIUM_SOAK=60s):
// idle HTTP keep-alive connections, joined sessions that never negotiate,
// constraints naming thousands of participants that do not exist, and garbage UDP
// to the media port — while three real participants talk in a room. The room's
// audio loses < 0.5 % of its packets, and once the abuse stops the server's file
// descriptors, goroutines and live heap return to where they were.
func TestSoakMixedAbuse(t *testing.T) {
	if testing.Short() {
		t.Skip("the soak takes about 30 s; make test runs it")
	}
	duration := soakShortDuration
	if v := os.Getenv("PODIUM_SOAK"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("PODIUM_SOAK=%q: %v", v, err)
		}
		duration = d
	}
	srv := startServerWith(t, Options{}, func(c *config.Config) {
		c.JoinsPerIP = 0                 // the abusers rejoin; the join limit is tested on its own
		c.MediaTimeout = 5 * time.Second // silent joins are removed, and rejoin, during the soak
	})

	// The real room: three participants publishing and receiving each other.
	var room []*client.Client
	for _, name := range []string{"A", "B", "C"} {
		room = append(room, dial(t, srv, "soak-real", name, true))
	}
	for _, cl := range room {
		var others []string
		for _, o := range room {
			if o != cl {
				others = append(others, o.Snapshot().ID)
			}
		}
		waitFor(t, cl, "receives the others", 15*time.Second, receiving(others...))
	}
	realIDs := map[string]bool{}
	for _, cl := range room {
		realIDs[cl.Snapshot().ID] = true
	}

	baseFDs, baseGoroutines, baseHeap := openFDs(t), settledGoroutines(), liveHeap()
	before := audioCounts(room)
	t.Logf("baseline with the room running: %d fds, %d goroutines, %d KiB live heap", baseFDs, baseGoroutines, baseHeap>>10)

	start := time.Now()
	ctx, stop := context.WithTimeout(context.Background(), duration)
	defer stop()
	var wg sync.WaitGroup
	abuse := func(name string, f func(ctx context.Context) int) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.Logf("abuse %s: %d", name, f(ctx))
		}()
	}
	abuse("idle keep-alive connections opened", func(ctx context.Context) int { return holdIdleConns(ctx, srv, soakIdleConns) })
	abuse("silent joins", func(ctx context.Context) int { return silentJoins(ctx, srv, soakSilentJoins) })
	abuse("constraints messages with unknown ids", func(ctx context.Context) int { return floodConstraints(ctx, srv, soakConstraintSend) })
	abuse("garbage datagrams", func(ctx context.Context) int { return garbageUDP(ctx, srv, soakUDPRate) })
	var peakHeap uint64 // sampled half-way and near the end of the abuse
	for _, at := range []time.Duration{duration / 2, duration - 2*time.Second} {
		sleepCtx(ctx, time.Until(start.Add(at)))
		peakHeap = max(peakHeap, liveHeap())
	}
	wg.Wait()

	after := audioCounts(room)
	var received, expected int
	for key, a := range after {
		b := before[key]
		received += a.packets - b.packets
		expected += a.expected - b.expected
	}
	if expected < int(duration.Seconds())*6*25 { // 6 audio streams at 50 pkt/s; half is flowing on a busy box
		t.Fatalf("the room's audio spanned %d packets in %v: it did not keep flowing (%v)", expected, duration, after)
	}
	loss := 1 - float64(received)/float64(expected)
	t.Logf("the room's audio during %v of abuse: %d of %d packets, loss %.3f %%", duration, received, expected, 100*loss)
	if loss > soakLossLimit {
		t.Errorf("the room's audio lost %.2f %% during the abuse, want < %.1f %%", 100*loss, 100*soakLossLimit)
	}
	for _, cl := range room {
		if st := cl.Snapshot(); st.Closed != nil || st.Bye != "" {
			t.Errorf("real participant %s was closed during the abuse: %v %s", st.ID, st.Closed, st.Bye)
		}
	}
	if peakHeap > baseHeap+soakPeakHeapSlop {
		t.Errorf("during the abuse: live heap %d KiB, baseline %d KiB (+%d KiB): state grows with what abusers name", peakHeap>>10, baseHeap>>10, soakPeakHeapSlop>>10)
	}

	// Back to the baseline once the abusers are gone.
	waitUntil(t, "the abusers' rooms to end", 20*time.Second, func() bool { return len(srv.Hub().Rooms()) == 1 })
	for _, cl := range room { // the flooders joined the real room; they must be gone from it
		waitFor(t, cl, "sees only the real room", 10*time.Second, func(s *client.State) bool {
			for id := range s.Participants {
				if !realIDs[id] {
					return false
				}
			}
			return len(s.Participants) == len(room)-1
		})
	}
	expectGoroutinesWithin(t, "after the abuse", baseGoroutines, soakGoroutineSlop, 20*time.Second)
	deadline := time.Now().Add(10 * time.Second)
	fds := openFDs(t)
	for fds > baseFDs+soakFDSlop && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond) // polling a count: there is nothing to wait on
		fds = openFDs(t)
	}
	if fds > baseFDs+soakFDSlop {
		t.Errorf("after the abuse: %d open fds, baseline %d (+%d)", fds, baseFDs, soakFDSlop)
	}
	if heap := liveHeap(); heap > baseHeap+soakHeapSlop {
		t.Errorf("after the abuse: live heap %d KiB, baseline %d KiB (+%d KiB)", heap>>10, baseHeap>>10, soakHeapSlop>>10)
	} else {
		t.Logf("after the abuse: %d fds, live heap %d KiB", fds, heap>>10)
	}
}

type audioCount struct{ packets, expected int }

// audioCounts is what each participant received of each audio track so far.
func audioCounts(room []*client.Client) map[string]audioCount {
	out := map[string]audioCount{}
	for _, cl := range room {
		st := cl.Snapshot()
		for id, tr := range st.Tracks {
			if tr.Kind == "audio" {
				out[st.ID+"/"+id] = audioCount{tr.Packets, tr.Expected()}
			}
		}
	}
	return out
}

func openFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("counting file descriptors needs /proc: %v", err)
	}
	return len(entries)
}

// holdIdleConns keeps up to n keep-alive connections open, each after one
// request, reopening those the server closes. It returns how many it opened.
func holdIdleConns(ctx context.Context, srv *Server, n int) int {
	addr := strings.TrimSuffix(strings.TrimPrefix(srv.URL(), "http://"), "/")
	opened := 0
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	for ctx.Err() == nil {
		live := conns[:0]
		for _, c := range conns {
			_ = c.SetReadDeadline(time.Now().Add(time.Millisecond))
			if _, err := c.Read(make([]byte, 1)); err != nil && !isTimeout(err) {
				_ = c.Close() // the server closed it
				continue
			}
			live = append(live, c)
		}
		conns = live
		for len(conns) < n && ctx.Err() == nil {
			c, err := net.DialTimeout("tcp", addr, time.Second)
			if err != nil {
				break // refused beyond a per-address cap: that is the point
			}
			opened++
			fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
			_ = c.SetReadDeadline(time.Now().Add(time.Second))
			if _, err := bufio.NewReader(c).ReadString('\n'); err != nil {
				_ = c.Close()
				break
			}
			conns = append(conns, c)
		}
		sleepCtx(ctx, 200*time.Millisecond)
	}
	return opened
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// silentJoins keeps n sessions joined, each in a room of its own, that never
// negotiate media; it rejoins those the server removes.
func silentJoins(ctx context.Context, srv *Server, n int) int {
	var joined atomic.Int64
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				conn, err := joinRaw(ctx, srv, fmt.Sprint("silent-", i))
				if err != nil {
					sleepCtx(ctx, 200*time.Millisecond)
					continue
				}
				joined.Add(1)
				for ctx.Err() == nil {
					if _, _, err := conn.Read(ctx); err != nil {
						break
					}
				}
				_ = conn.CloseNow()
			}
		}()
	}
	wg.Wait()
	return int(joined.Load())
}

// floodConstraints has n sessions in the real room send constraints naming 256
// participants that do not exist, new ones every time, as fast as the server
// takes them.
func floodConstraints(ctx context.Context, srv *Server, n int) int {
	var mu sync.Mutex
	sent := 0
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := joinRaw(ctx, srv, "soak-real")
			if err != nil {
				return
			}
			defer conn.CloseNow()
			go func() { // drain what the server sends, so it never blocks on us
				for {
					if _, _, err := conn.Read(ctx); err != nil {
						return
					}
				}
			}()
			rng := rand.New(rand.NewPCG(rand.Uint64(), 1))
			for ctx.Err() == nil {
				videos := map[string]signal.VideoConstraint{}
				for range 256 {
					videos[fmt.Sprintf("p%08x", rng.Uint32())] = signal.VideoConstraint{Width: 1280, Height: 720}
				}
				frame, err := signal.Encode(signal.TypeConstraints, signal.Constraints{Videos: videos})
				if err != nil {
					panic(err)
				}
				if conn.Write(ctx, websocket.MessageText, frame) != nil {
					return
				}
				mu.Lock()
				sent++
				mu.Unlock()
				sleepCtx(ctx, 50*time.Millisecond) // the signaling rate limit is 20/s
			}
		}()
	}
	wg.Wait()
	return sent
}

// joinRaw opens a signaling connection and joins room, returning after welcome.
func joinRaw(ctx context.Context, srv *Server, room string) (*websocket.Conn, error) {
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(dctx, wsURL(srv), nil)
	if err != nil {
		return nil, err
	}
	conn.SetReadLimit(1 << 20)
	frame, _ := signal.Encode(signal.TypeJoin, signal.Join{Version: signal.Version, Room: room, Name: "abuser"})
	if err := conn.Write(dctx, websocket.MessageText, frame); err != nil {
		_ = conn.CloseNow()
		return nil, err
	}
	for {
		_, msg, err := conn.Read(dctx)
		if err != nil {
			_ = conn.CloseNow()
			return nil, err
		}
		if strings.Contains(string(msg), `"type":"welcome"`) {
			return conn, nil
		}
		if strings.Contains(string(msg), `"type":"error"`) {
			_ = conn.CloseNow()
			return nil, fmt.Errorf("join refused: %s", msg)
		}
	}
}

// garbageUDP sends rate datagrams a second to the media port from 8 sockets:
// random bytes shaped like STUN, DTLS and RTP/RTCP by their first byte.
func garbageUDP(ctx context.Context, srv *Server, rate int) int {
	target := srv.MediaAddrs()[0].(*net.UDPAddr)
	var socks []*net.UDPConn
	for range 8 {
		c, err := net.DialUDP("udp", nil, target)
		if err != nil {
			continue
		}
		defer c.Close()
		socks = append(socks, c)
	}
	if len(socks) == 0 {
		return 0
	}
	rng := rand.New(rand.NewPCG(7, 7))
	firsts := []byte{0x00, 0x01, 0x16, 0x15, 0x17, 0x80, 0x90, 0x81, 0xff}
	buf := make([]byte, 1200)
	sent := 0
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return sent
		case <-tick.C:
		}
		for range rate / 100 {
			n := 12 + rng.IntN(len(buf)-12)
			for i := range buf[:n] {
				buf[i] = byte(rng.Uint32())
			}
			buf[0] = firsts[rng.IntN(len(firsts))]
			if _, err := socks[rng.IntN(len(socks))].Write(buf[:n]); err == nil {
				sent++
			}
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
