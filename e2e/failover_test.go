package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/podium-sfu/podium/internal/config"
	"github.com/podium-sfu/podium/internal/server"
	"github.com/podium-sfu/podium/internal/signal"
	"github.com/podium-sfu/podium/web"
)

// nodeEnv, set, makes the test binary a podium node (TestMain): a real
// process the failover test kills with SIGKILL. Its value is a nodeSpec.
const nodeEnv = "PODIUM_E2E_NODE"

// nodeSpec is what a node process serves: the flags startRelayNodes sets.
type nodeSpec struct {
	HTTP, Region, ClusterListen string
	ClusterPeers                []string
	RelayPort                   int
}

// runNode serves as the node of os.Getenv(nodeEnv) until killed, with the
// cluster's default heartbeat and TTL (as `podium serve`).
func runNode() int {
	var spec nodeSpec
	if err := json.Unmarshal([]byte(os.Getenv(nodeEnv)), &spec); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	cfg := config.Default()
	cfg.HTTP, cfg.UDPPort, cfg.TCPPort, cfg.MediaIPs, cfg.P2P = spec.HTTP, 0, 0, []string{"127.0.0.1"}, false
	cfg.Region, cfg.ClusterListen, cfg.ClusterPeers, cfg.RelayPort = spec.Region, spec.ClusterListen, spec.ClusterPeers, spec.RelayPort
	var logOut io.Writer = io.Discard
	if os.Getenv("PODIUM_TEST_LOG") != "" {
		logOut = os.Stderr
	}
	srv, err := server.New(cfg, server.Options{Client: web.Files()}, slog.New(slog.NewTextHandler(logOut, nil)))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := srv.Serve(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// nodeProc is a node process.
type nodeProc struct {
	spec nodeSpec
	base string
	cmd  *exec.Cmd
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startNodeProcs runs one node process per region, clustered over loopback
// with the relay, and waits until each counts them all.
func startNodeProcs(t *testing.T, regions ...string) []*nodeProc {
	t.Helper()
	if !web.Built() {
		t.Fatal("web client not built: run `make web`")
	}
	var routes, peers []string
	for range regions {
		r := freeAddr(t)
		routes = append(routes, r)
		peers = append(peers, "nats://"+r)
	}
	var out []*nodeProc
	for i, region := range regions {
		udp, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		relay := udp.LocalAddr().(*net.UDPAddr).Port
		_ = udp.Close()
		httpAddr := freeAddr(t)
		n := &nodeProc{spec: nodeSpec{HTTP: httpAddr, Region: region, ClusterListen: routes[i], ClusterPeers: peers, RelayPort: relay},
			base: "http://" + httpAddr + "/"}
		spec, _ := json.Marshal(n.spec)
		n.cmd = exec.Command(os.Args[0], "-test.run=^$")
		n.cmd.Env = append(os.Environ(), nodeEnv+"="+string(spec))
		n.cmd.Stderr = os.Stderr
		if err := n.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmd := n.cmd
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		out = append(out, n)
	}
	within(t, "every node counts them all", 60*time.Second, func() (bool, string) {
		var got []int
		for _, n := range out {
			got = append(got, n.metric("podium_cluster_nodes"))
		}
		for _, v := range got {
			if v != len(out) {
				return false, fmt.Sprint(got)
			}
		}
		return true, ""
	})
	return out
}

// metric is a gauge of the node's /metrics, -1 when it does not answer.
func (n *nodeProc) metric(name string) int {
	resp, err := http.Get(n.base + "metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		var v int
		if _, err := fmt.Sscanf(line, name+" %d", &v); err == nil {
			return v
		}
	}
	return -1
}

// placedElsewhere reports whether a join to room at n now would be redirected
// (a plain WebSocket join, closed at once).
func placedElsewhere(t *testing.T, n *nodeProc, room string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(n.base, "http")+"ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	join, _ := json.Marshal(map[string]any{"type": "join", "version": signal.Version, "room": room, "name": "probe"})
	if err := conn.Write(ctx, websocket.MessageText, join); err != nil {
		t.Fatal(err)
	}
	_, frame, err := conn.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var head struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(frame, &head)
	return head.Type == signal.TypeRedirect
}

// hasMedia: b receives audio and decodes video of id on its current session.
func hasMedia(b *Browser, id string) (bool, string) {
	rows, err := b.inbound()
	if err != nil {
		return false, err.Error()
	}
	var audio, video bool
	for _, r := range rows {
		if r.ParticipantID != id {
			continue
		}
		audio = audio || (r.Kind == "audio" && r.PacketsReceived > 0)
		video = video || (r.Kind == "video" && r.FramesDecoded > 0)
	}
	return audio && video, fmt.Sprintf("%s: audio %v, video decoded %v from %s", b.name, audio, video, id)
}

// TestFailoverInTheBrowser is issue 15's failover browser test: three node
// processes (us, us, eu) with the relay; Ann (us) and Bob (eu) in a call, on
// different bridges. Ann's bridge, which served her page unless load moved
// between a probe and her join, is killed with SIGKILL. Her page fails over
// by itself (the bridge, then its welcome's fallbacks): she is back in the
// conference on the other us node, receiving Bob's audio and decoding his
// video, within 5 s of the kill; Bob's session goes on (same id) and he shows
// Ann's camera again.
func TestFailoverInTheBrowser(t *testing.T) {
	nodes := startNodeProcs(t, "us", "us", "eu")
	const room = "failover-e2e"
	ann := launch(t, "Ann", camera(t, red, 320, 180), autoplay)
	ann.withMicrophone(true)
	bob := launch(t, "Bob", camera(t, green, 320, 180), autoplay)
	bob.withMicrophone(false)
	// Ann's page from the node that will likely be her bridge, so that the
	// kill also takes the page's origin: her page then fails over to another
	// origin.
	entry := nodes[0]
	if placedElsewhere(t, nodes[0], room) {
		entry = nodes[1]
	}
	annWho := who{Name: "Ann", ID: ann.join(entry.base+room+"?video=320x180&name=", "Ann"), Colour: red}
	bobWho := who{Name: "Bob", ID: bob.join(nodes[2].base+room+"?video=320x180&name=", "Bob"), Colour: green}
	within(t, "Ann shows Bob", 20*time.Second, func() (bool, string) { return showsWho(ann, bobWho) })
	within(t, "Bob shows Ann", 20*time.Second, func() (bool, string) { return showsWho(bob, annWho) })
	var bridge, other *nodeProc
	within(t, "Ann's bridge is a us node", 5*time.Second, func() (bool, string) {
		a, b := nodes[0].metric("podium_cluster_rooms_served"), nodes[1].metric("podium_cluster_rooms_served")
		switch {
		case a == 1 && b == 0:
			bridge, other = nodes[0], nodes[1]
		case a == 0 && b == 1:
			bridge, other = nodes[1], nodes[0]
		default:
			return false, fmt.Sprintf("rooms served: us0 %d, us1 %d", a, b)
		}
		return true, ""
	})
	// Load can move between the probe and the join (CPU in 10 % steps).
	t.Logf("Ann's bridge %s the node that served her page", map[bool]string{true: "is", false: "is not"}[bridge == entry])

	if err := bob.eval(`(() => { window.__reconnects = 0; window.podium.conference.on('reconnecting', () => window.__reconnects++); return true; })()`, nil); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	if err := bridge.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = bridge.cmd.Wait()
	var annNew string
	within(t, "Ann back in the conference with Bob's audio and video", 15*time.Second, func() (bool, string) {
		annNew = ann.id()
		if annNew == "" || annNew == annWho.ID {
			return false, "Ann has not rejoined"
		}
		return hasMedia(ann, bobWho.ID)
	})
	took := time.Since(killed)
	t.Logf("Ann decodes Bob's video again %v after the kill (as %s)", took.Round(time.Millisecond), annNew)
	if took > 5*time.Second {
		t.Errorf("Ann had media again %v after the kill, want within 5 s", took)
	}
	if got := other.metric("podium_cluster_rooms_served"); got != 1 {
		t.Errorf("the other us node serves %d rooms, want Ann's", got)
	}
	within(t, "Ann decodes Bob's video", 5*time.Second, func() (bool, string) { return videoRising(ann, bobWho.ID) })
	annWho.ID = annNew
	within(t, "Bob shows Ann again", 10*time.Second, func() (bool, string) { return showsWho(bob, annWho) })
	within(t, "Bob decodes Ann's video", 5*time.Second, func() (bool, string) { return videoRising(bob, annNew) })
	var reconnects int
	if err := bob.eval(`window.__reconnects`, &reconnects); err != nil || reconnects != 0 || bob.id() != bobWho.ID {
		t.Errorf("Bob's session was interrupted: %d reconnects (%v), id %s → %s", reconnects, err, bobWho.ID, bob.id())
	}
	t.Logf("Bob shows and decodes Ann again %v after the kill", time.Since(killed).Round(time.Millisecond))
}
