package e2e

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/podium-sfu/podium/internal/config"
	"github.com/podium-sfu/podium/internal/server"
	"github.com/podium-sfu/podium/internal/turn"
)

// relayOnlyScript makes every peer connection of the page use relay
// candidates only (iceTransportPolicy: relay), as a browser behind a firewall
// that lets only TCP to the TURN server through would end up doing: the
// client itself is unchanged.
const relayOnlyScript = `(() => {
	const Base = window.RTCPeerConnection;
	if (!Base) return;
	window.RTCPeerConnection = class extends Base {
		constructor(cfg, ...rest) { super({...(cfg || {}), iceTransportPolicy: 'relay'}, ...rest); }
	};
})()`

// selectedPath describes each of the page's connected peer connections: the
// local candidate of its selected pair (type, and for a relay the transport
// to the TURN server) and the remote candidate's address.
const selectedPath = `(async () => {
	const out = [];
	for (const pc of window.__podiumTest.pcs) {
		if (pc.connectionState === 'closed') continue;
		const stats = await pc.getStats();
		let pair = null;
		stats.forEach((s) => { if (s.type === 'transport' && s.selectedCandidatePairId) pair = stats.get(s.selectedCandidatePairId); });
		if (!pair) { out.push({state: pc.connectionState}); continue; }
		const l = stats.get(pair.localCandidateId), r = stats.get(pair.remoteCandidateId);
		out.push({state: pc.connectionState, local: l.candidateType, relayProtocol: l.relayProtocol || '',
			remote: r.address + ':' + r.port, bytesSent: pair.bytesSent, bytesReceived: pair.bytesReceived});
	}
	return out;
})()`

type pcPath struct {
	State         string `json:"state"`
	Local         string `json:"local"`
	RelayProtocol string `json:"relayProtocol"`
	Remote        string `json:"remote"`
	BytesSent     int64  `json:"bytesSent"`
	BytesReceived int64  `json:"bytesReceived"`
}

// TestRelayOnlyThroughTURNOverTCP: Ann's browser may use relay candidates
// only, and the embedded TURN server is reachable over TCP only; her
// connections to the SFU run through it (the welcome's turn:…?transport=tcp
// with credentials minted for her), and she and Bob see each other's camera.
func TestRelayOnlyThroughTURNOverTCP(t *testing.T) {
	port := freeTCPPort(t)
	srv := startServerWith(t, func(c *config.Config) {
		c.TURNTCPPort = port
		c.P2P = false // the SFU carries the media: that is what is relayed here
	})
	ann := launch(t, "Ann", camera(t, red, 320, 180))
	ann.addScript(relayOnlyScript)
	bob := launch(t, "Bob", camera(t, green, 320, 180))
	base := srv.URL() + "e2e-turn?video=320x180&name="
	ann.open(base + "Ann")
	bob.open(base + "Bob")
	people := map[string]who{"Ann": {Name: "Ann", Colour: red}, "Bob": {Name: "Bob", Colour: green}}
	for n, b := range map[string]*Browser{"Ann": ann, "Bob": bob} {
		within(t, n+" joined", 15*time.Second, func() (bool, string) {
			p := people[n]
			p.ID = b.id()
			people[n] = p
			return p.ID != "", "no participant id yet"
		})
	}
	took := within(t, "Ann and Bob see each other", 30*time.Second, func() (bool, string) {
		if ok, why := showsWho(ann, people["Bob"]); !ok {
			return false, "Ann: " + why
		}
		if ok, why := showsWho(bob, people["Ann"]); !ok {
			return false, "Bob: " + why
		}
		return true, ""
	})
	t.Logf("each shows the other's camera %v after joining", took.Round(time.Millisecond))

	var paths []pcPath
	within(t, "Ann's connections run over TURN TCP", 10*time.Second, func() (bool, string) {
		if err := ann.eval(selectedPath, &paths); err != nil {
			return false, err.Error()
		}
		connected := 0
		for _, p := range paths {
			if p.State != "connected" {
				continue
			}
			connected++
			if p.Local != "relay" || p.RelayProtocol != "tcp" {
				return false, fmt.Sprintf("a connection's selected pair is %+v", p)
			}
		}
		return connected >= 2, fmt.Sprintf("%d connected (publish and subscribe expected): %+v", connected, paths)
	})
	for _, p := range paths {
		t.Logf("Ann: %s via %s/%s to %s, %d B sent, %d B received", p.State, p.Local, p.RelayProtocol, p.Remote, p.BytesSent, p.BytesReceived)
	}
	// Her media keeps flowing both ways, all of it through the TURN server.
	within(t, "Ann keeps decoding Bob", 10*time.Second, func() (bool, string) { return rising(ann, []string{people["Bob"].ID}) })
	within(t, "Bob keeps decoding Ann", 10*time.Second, func() (bool, string) { return rising(bob, []string{people["Ann"].ID}) })
	var stats turn.Stats
	within(t, "the TURN server relays 50 kB each way", 10*time.Second, func() (bool, string) {
		stats = srv.TURN().Stats()
		return stats.Allocations >= 2 && stats.BytesToPeers >= 50_000 && stats.BytesFromPeers >= 50_000, fmt.Sprintf("%+v", stats)
	})
	t.Logf("TURN: %d allocations, %d B to the SFU, %d B from it, %d refused packets, %d auth failures",
		stats.Allocations, stats.BytesToPeers, stats.BytesFromPeers, stats.RefusedPackets, stats.AuthIntegrity+stats.AuthExpired+stats.AuthMalformed)
	if m := metric(t, srv, `podium_turn_allocations`); m < 2 {
		t.Fatalf("podium_turn_allocations %v", m)
	}
}

// freeTCPPort is a free TCP port on 127.0.0.1 (the TURN server takes a port).
func freeTCPPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// metric reads one unlabelled sample from the server's /metrics.
func metric(t *testing.T, srv *server.Server, name string) float64 {
	t.Helper()
	resp, err := http.Get(srv.MetricsURL())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	t.Fatalf("no %s in /metrics", name)
	return 0
}
