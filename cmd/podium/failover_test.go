package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/podium-sfu/podium/internal/client"
)

// node is one podium serve process of a test cluster.
type node struct {
	name   string
	args   []string
	base   string // http://127.0.0.1:port/
	cmd    *exec.Cmd
	stderr *syncBuffer
}

// freePort is a loopback port free now, TCP or UDP.
func freePort(t *testing.T, network string) int {
	t.Helper()
	if network == "udp" {
		c, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		return c.LocalAddr().(*net.UDPAddr).Port
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startProcessCluster runs one podium serve process per region, clustered
// over loopback routes with the relay, as the README's 3-node example.
func startProcessCluster(t *testing.T, regions ...string) []*node {
	t.Helper()
	var routes, peers []string
	for range regions {
		r := fmt.Sprintf("127.0.0.1:%d", freePort(t, "tcp"))
		routes = append(routes, r)
		peers = append(peers, "nats://"+r)
	}
	var out []*node
	for i, region := range regions {
		httpPort := freePort(t, "tcp")
		n := &node{name: fmt.Sprintf("%s%d", region, i), base: fmt.Sprintf("http://127.0.0.1:%d/", httpPort), args: []string{"serve",
			"--http", fmt.Sprintf("127.0.0.1:%d", httpPort), "--udp-port", "0", "--tcp-port", "0", "--media-ip", "127.0.0.1",
			"--p2p=false", "--joins-per-ip", "0", "--drain-timeout", "30s",
			"--region", region, "--cluster-listen", routes[i], "--cluster-peers", strings.Join(peers, ","),
			"--relay-port", fmt.Sprint(freePort(t, "udp"))}}
		n.start(t)
		out = append(out, n)
	}
	return out
}

func (n *node) start(t *testing.T) {
	t.Helper()
	n.cmd, n.stderr = command(t, n.args...)
	if os.Getenv("PODIUM_TEST_LOG") != "" {
		n.cmd.Stderr = os.Stderr
	}
	if err := n.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cmd := n.cmd
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
}

func (n *node) ws() string { return "ws" + strings.TrimPrefix(n.base, "http") + "ws" }

// clusterNodes is the node's podium_cluster_nodes, or -1 when it does not answer.
func (n *node) clusterNodes() int {
	resp, err := http.Get(n.base + "metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		var v int
		if _, err := fmt.Sscanf(line, "podium_cluster_nodes %d", &v); err == nil {
			return v
		}
	}
	return -1
}

func eventually(t *testing.T, d time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		ok, why := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s: %s", d, what, why)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// mediaFrom is when c first got audio and video of every one of ids since
// after, and whether it has them all; video counts from a keyframe.
func mediaFrom(c *client.Client, ids ...string) (time.Time, bool) {
	st := c.Snapshot()
	var last time.Time
	for _, id := range ids {
		for _, kind := range []string{"audio", "video"} {
			tr := st.Tracks[kind+"-"+id]
			if tr == nil || tr.Packets == 0 || (kind == "video" && tr.Keyframes == 0) {
				return time.Time{}, false
			}
			if tr.FirstSeen.After(last) {
				last = tr.FirstSeen
			}
		}
	}
	return last, true
}

// missingMedia says which of ids' audio or video (from a keyframe) c lacks.
func missingMedia(c *client.Client, ids ...string) string {
	st := c.Snapshot()
	var out []string
	for _, id := range ids {
		for _, kind := range []string{"audio", "video"} {
			tr := st.Tracks[kind+"-"+id]
			switch {
			case tr == nil:
				out = append(out, kind+"-"+id+" absent")
			case tr.Packets == 0 || (kind == "video" && tr.Keyframes == 0):
				out = append(out, fmt.Sprintf("%s-%s %d packets, %d keyframes", kind, id, tr.Packets, tr.Keyframes))
			}
		}
	}
	return fmt.Sprintf("%s lacks %v (forwarded %v)", st.ID, out, st.Forwarded)
}

// TestFailoverSIGKILL is issue 15's failover test with real processes: three
// nodes (us, us, eu) with the relay; four participants on one us bridge, two
// on the eu one. The us bridge is killed with SIGKILL mid-call. Its
// participants rejoin as the web client does (the bridge, then their
// welcome's fallbacks) and must be back in the conference on the other us
// node — the same region — and receiving the others' audio and video within
// 5 s of the kill, the room's Last N carried over from the directory; the eu
// participants' sessions go on, and the media between them never stops for
// more than 1 s. The killed node restarts with the same flags and every node
// counts three nodes again. Then SIGTERM drains the node serving the four:
// they are redirected to the restarted node and it exits once they have left.
func TestFailoverSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three podium processes")
	}
	nodes := startProcessCluster(t, "us", "us", "eu")
	start := time.Now()
	eventually(t, 60*time.Second, "every node counts three nodes", func() (bool, string) {
		var got []int
		for _, n := range nodes {
			got = append(got, n.clusterNodes())
		}
		return slices.Equal(got, []int{3, 3, 3}), fmt.Sprint(got)
	})
	t.Logf("cluster formed %v after the start", time.Since(start).Round(time.Millisecond))

	const room = "failover"
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	join := func(name, entry string) *client.Client {
		c, err := client.Join(ctx, client.Options{Room: room, Name: name, Publish: true}, entry)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		t.Cleanup(c.Close)
		return c
	}
	usNames := []string{"Ann", "Cleo", "Eve", "Finn"}
	// PODIUM_FAILOVER_N=12: more participants on the bridge that dies.
	if n, err := strconv.Atoi(os.Getenv("PODIUM_FAILOVER_N")); err == nil && n > len(usNames) {
		for i := len(usNames); i < n; i++ {
			usNames = append(usNames, fmt.Sprintf("P%d", i+1))
		}
	}
	var us []*client.Client
	for _, name := range usNames {
		us = append(us, join(name, nodes[0].ws()))
	}
	bob := join("Bob", nodes[2].ws()+"?region=eu")
	dan := join("Dan", nodes[2].ws()+"?region=eu")
	bridgeID := us[0].Snapshot().Node
	for i, c := range us {
		if st := c.Snapshot(); st.Node != bridgeID {
			t.Fatalf("%s on %s, Ann on %s: want one us bridge", usNames[i], st.Node, bridgeID)
		}
	}
	if bob.Snapshot().Node == bridgeID || dan.Snapshot().Node != bob.Snapshot().Node {
		t.Fatalf("Bob on %s, Dan on %s, us on %s: want the eu participants on the eu node", bob.Snapshot().Node, dan.Snapshot().Node, bridgeID)
	}
	// The killed bridge is the us node missing from Ann's fallbacks.
	var victim, survivor *node
	for _, n := range nodes[:2] {
		named := false
		for _, f := range us[0].Snapshot().Fallbacks {
			if strings.HasPrefix(f, n.ws()) {
				named = true
			}
		}
		if named {
			survivor = n
		} else {
			victim = n
		}
	}
	if victim == nil || survivor == nil {
		t.Fatalf("cannot tell the bridge from Ann's fallbacks %v", us[0].Snapshot().Fallbacks)
	}
	// Last N above the others' number (6 with four; the default is 8) at the
	// bridge: the room's state in the directory.
	lastN := len(usNames) + 2
	// Set at the bridge; the eu bridge applies it too (the cluster's settings
	// key), and the bridge the four fail over to opens the room with it.
	// A change made before JetStream has a leader applies at its bridge
	// only (CI under -race: the survivor opened the room with Last N 8), so
	// it is made again until the eu bridge shows it: then it is in the key.
	var patched time.Time
	eventually(t, 30*time.Second, "the eu bridge applies the Last N set at the us bridge", func() (bool, string) {
		var eu struct {
			LastN int `json:"lastN"`
		}
		getJSONTo(t, nodes[2].base+"api/v1/rooms/"+room, &eu)
		if eu.LastN == lastN {
			return true, ""
		}
		if time.Since(patched) > 3*time.Second {
			patched = time.Now()
			req, _ := http.NewRequest(http.MethodPatch, victim.base+"api/v1/rooms/"+room, strings.NewReader(fmt.Sprintf(`{"lastN":%d}`, lastN)))
			req.Header.Set("Content-Type", "application/json")
			if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("PATCH lastN at %s: %v %v", victim.name, resp, err)
			} else {
				resp.Body.Close()
			}
		}
		return false, fmt.Sprintf("Last N %d at the eu bridge", eu.LastN)
	})
	bobID, danID := bob.Snapshot().ID, dan.Snapshot().ID
	eventually(t, 20*time.Second, "everyone receives the eu participants, and they each other", func() (bool, string) {
		for i, c := range us {
			if _, ok := mediaFrom(c, bobID, danID); !ok {
				return false, usNames[i] + " lacks Bob's or Dan's media"
			}
		}
		_, ok1 := mediaFrom(bob, danID)
		_, ok2 := mediaFrom(dan, bobID)
		return ok1 && ok2, "Bob and Dan"
	})
	// The change is in the cluster's settings key once the PATCH answered;
	// the directory entries (the fallback where the key is missing) are
	// written at the next heartbeat (every 2 s), so the kill still waits past
	// one.
	time.Sleep(2500 * time.Millisecond)

	// Bob's receiving of Dan, sampled through the failover: the longest silence.
	var gapMu sync.Mutex
	var worstGap time.Duration
	stopGap := make(chan struct{})
	gapDone := make(chan struct{})
	go func() {
		defer close(gapDone)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stopGap:
				return
			case now := <-tick.C:
				st := bob.Snapshot()
				for _, kind := range []string{"audio", "video"} {
					if tr := st.Tracks[kind+"-"+danID]; tr != nil {
						gapMu.Lock()
						worstGap = max(worstGap, now.Sub(tr.LastSeen))
						gapMu.Unlock()
					}
				}
			}
		}
	}()

	olds := make([]client.State, len(us))
	for i, c := range us {
		olds[i] = c.Snapshot()
	}
	bridgeURL := us[0].URL()
	killed := time.Now()
	if err := victim.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = victim.cmd.Wait()

	// Each participant of the dead bridge fails over on its own, as its page would.
	type result struct {
		c        *client.Client
		err      error
		welcomed time.Time
	}
	results := make([]result, len(us))
	var wg sync.WaitGroup
	for i, c := range us {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.Wait(ctx, func(s *client.State) bool { return s.Closed != nil }); err != nil {
				results[i].err = fmt.Errorf("the old session did not end: %w", err)
				return
			}
			c.Close()
			st := olds[i]
			nc, err := client.Failover(ctx, client.Options{Room: room, Name: usNames[i], Publish: true, Resume: &st.Resume}, bridgeURL, st.Fallbacks)
			results[i] = result{c: nc, err: err, welcomed: time.Now()}
		}()
	}
	wg.Wait()
	var newIDs []string
	for i, r := range results {
		if r.err != nil {
			t.Fatalf("%s: %v", usNames[i], r.err)
		}
		t.Cleanup(r.c.Close)
		if got := r.c.Snapshot().Node; got == bridgeID || !strings.HasPrefix(r.c.URL(), survivor.ws()) {
			t.Errorf("%s rejoined at %s (%s), want the other us node", usNames[i], got, r.c.URL())
		}
		newIDs = append(newIDs, r.c.Snapshot().ID)
	}
	var worst time.Duration
	for i, r := range results {
		others := []string{bobID, danID}
		eventually(t, 10*time.Second, usNames[i]+" receives Bob's and Dan's media again", func() (bool, string) {
			_, ok := mediaFrom(r.c, others...)
			return ok, missingMedia(r.c, others...)
		})
		at, _ := mediaFrom(r.c, others...)
		took := at.Sub(killed)
		t.Logf("%s: welcomed at the other us node %v after the kill, media from the eu participants %v after it",
			usNames[i], r.welcomed.Sub(killed).Round(time.Millisecond), took.Round(time.Millisecond))
		worst = max(worst, took)
	}
	eventually(t, 20*time.Second, "Bob receives them all again", func() (bool, string) {
		_, ok := mediaFrom(bob, newIDs...)
		return ok, missingMedia(bob, newIDs...)
	})
	bobAt, _ := mediaFrom(bob, newIDs...)
	t.Logf("Bob receives the %d new sessions %v after the kill", len(newIDs), bobAt.Sub(killed).Round(time.Millisecond))
	close(stopGap)
	<-gapDone
	t.Logf("the slowest participant of the dead bridge had media back %v after the kill; Bob's longest silence from Dan %v",
		worst.Round(time.Millisecond), worstGap.Round(time.Millisecond))
	if worst > 5*time.Second {
		t.Errorf("media back %v after the kill, want within 5 s", worst)
	}
	if worstGap > time.Second {
		t.Errorf("Bob went %v without Dan's media during the failover: interrupted", worstGap)
	}
	for _, c := range []*client.Client{bob, dan} {
		if st := c.Snapshot(); st.Closed != nil {
			t.Errorf("%s's session ended: %v", st.ID, st.Closed)
		}
	}
	// The room took the Last N from the directory at the new bridge.
	var roomState struct {
		LastN int `json:"lastN"`
	}
	getJSONTo(t, survivor.base+"api/v1/rooms/"+room, &roomState)
	if roomState.LastN != lastN {
		t.Errorf("the room at the new bridge has Last N %d, want %d from the directory", roomState.LastN, lastN)
	}

	// Pages served by the dead node keep their origin at the survivors, after
	// the registry has dropped it too.
	eventually(t, 15*time.Second, "the survivors count two nodes", func() (bool, string) {
		a, b := survivor.clusterNodes(), nodes[2].clusterNodes()
		return a == 2 && b == 2, fmt.Sprint(a, b)
	})
	if code := wsStatus(t, survivor.ws(), strings.TrimSuffix(victim.base, "/")); code != http.StatusSwitchingProtocols {
		t.Errorf("a WebSocket from the dead node's page origin: HTTP %d, want 101", code)
	}
	if code := wsStatus(t, survivor.ws(), "http://127.0.0.1:1"); code == http.StatusSwitchingProtocols {
		t.Error("a WebSocket from an unknown origin was admitted (the origin check proves nothing)")
	}

	restarted := time.Now()
	victim.start(t)
	eventually(t, 60*time.Second, "every node counts three nodes after the restart", func() (bool, string) {
		var got []int
		for _, n := range nodes {
			got = append(got, n.clusterNodes())
		}
		return slices.Equal(got, []int{3, 3, 3}), fmt.Sprint(got)
	})
	t.Logf("the restarted node rejoined the cluster %v after its start", time.Since(restarted).Round(time.Millisecond))

	// Drain: SIGTERM to the node now serving the four redirects them to another
	// bridge (the restarted us node); they follow, and the node exits as soon
	// as they have left, long before its 30 s drain timeout.
	var moved []*client.Client
	for _, r := range results {
		moved = append(moved, r.c)
	}
	termed := time.Now()
	if err := survivor.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exited := make(chan time.Duration, 1)
	go func() { _ = survivor.cmd.Wait(); exited <- time.Since(termed) }()
	for i, c := range moved {
		if err := c.Wait(ctx, func(s *client.State) bool { return s.Redirect != nil }); err != nil {
			t.Fatalf("%s: no redirect from the draining node: %v", usNames[i], err)
		}
		rd := c.Snapshot().Redirect
		if !strings.HasPrefix(rd.URL, victim.ws()) {
			t.Errorf("%s sent to %s, want the restarted us node %s", usNames[i], rd.URL, victim.ws())
		}
		st := c.Snapshot()
		nc, err := client.Join(ctx, client.Options{Room: room, Name: usNames[i], Publish: true, Resume: &st.Resume}, rd.URL)
		if err != nil {
			t.Fatalf("%s follows the drain redirect: %v", usNames[i], err)
		}
		t.Cleanup(nc.Close)
		c.Close()
		moved[i] = nc
	}
	select {
	case d := <-exited:
		t.Logf("the drained node exited %v after SIGTERM", d.Round(time.Millisecond))
		if d > 10*time.Second {
			t.Errorf("the drained node exited %v after SIGTERM, want well within its 30 s drain timeout", d)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the drained node did not exit within 20 s of SIGTERM (its participants left)")
	}
	for i, c := range moved {
		eventually(t, 10*time.Second, usNames[i]+" receives Bob's and Dan's media on the restarted node", func() (bool, string) {
			_, ok := mediaFrom(c, bobID, danID)
			return ok, usNames[i]
		})
	}
	t.Logf("all receive Bob and Dan on the restarted node %v after SIGTERM", time.Since(termed).Round(time.Millisecond))
}

// wsStatus is the HTTP status of a WebSocket handshake to ws from origin.
func wsStatus(t *testing.T, ws, origin string) int {
	t.Helper()
	u, _ := url.Parse(strings.Replace(ws, "ws", "http", 1))
	req, _ := http.NewRequest(http.MethodGet, u.String(), nil)
	req.Header.Set("Origin", origin)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Sec-WebSocket-Version", "13")
	req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func getJSONTo(t *testing.T, u string, v any) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", u, resp.StatusCode, err)
	}
}
