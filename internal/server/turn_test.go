package server

import (
	"context"
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/pion/logging"
	pturn "github.com/pion/turn/v5"

	"github.com/podium-sfu/podium/internal/client"
	"github.com/podium-sfu/podium/internal/config"
	"github.com/podium-sfu/podium/internal/signal"
)

// freePort is a port free on 127.0.0.1 for both UDP and TCP, for the TURN
// server's listeners (its configuration takes ports, not addresses).
func freePort(t *testing.T) int {
	t.Helper()
	for range 20 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		u, err := net.ListenPacket("udp", l.Addr().String())
		_ = l.Close()
		if err == nil {
			_ = u.Close()
			return port
		}
	}
	t.Fatal("no free port")
	return 0
}

// TestJoinHandsOutTURNCredentials: with the embedded TURN server on, the
// welcome carries its turn: URLs (UDP and TCP) with credentials minted for
// this participant, with which a real TURN client allocates a relay; the
// metrics count it. External servers follow.
func TestJoinHandsOutTURNCredentials(t *testing.T) {
	port := freePort(t)
	srv := startServerWith(t, Options{}, func(c *config.Config) {
		c.TURNUDPPort, c.TURNTCPPort = port, port
		c.TURNSecret = "0123456789abcdef0123456789abcdef"
		c.TURNAllowPeer = []string{"127.0.0.3/32"} // a test peer; the rest of loopback stays refused
		c.ICEServers = []string{"stun:stun.example.org:3478", "turns:turn.example.org:443?transport=tcp"}
	})
	welcome := joinWelcome(t, srv, "turn-room")
	var minted *signal.ICEServer
	var urls []string
	for i, s := range welcome.ICEServers {
		urls = append(urls, s.URLs...)
		if strings.HasPrefix(s.URLs[0], "turn:127.0.0.1") {
			minted = &welcome.ICEServers[i]
		}
	}
	if minted == nil {
		t.Fatalf("no embedded TURN server in %+v", welcome.ICEServers)
	}
	want := []string{"turn:127.0.0.1:" + itoa(port) + "?transport=udp", "turn:127.0.0.1:" + itoa(port) + "?transport=tcp", "turns:turn.example.org:443?transport=tcp"}
	if strings.Join(minted.URLs, " ") != strings.Join(want, " ") {
		t.Fatalf("minted URLs %v, want %v (external turns: shares the secret)", minted.URLs, want)
	}
	if !strings.HasSuffix(minted.Username, ":"+welcome.ID) {
		t.Fatalf("username %q is not minted for %s", minted.Username, welcome.ID)
	}
	if !strings.Contains(strings.Join(urls, " "), "stun:stun.example.org:3478") {
		t.Fatalf("the external STUN server is missing: %v", urls)
	}
	for _, transport := range []string{"udp", "tcp"} {
		var conn net.PacketConn
		addr := net.JoinHostPort("127.0.0.1", itoa(port))
		if transport == "udp" {
			pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			conn = pc
		} else {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			conn = pturn.NewSTUNConn(c)
		}
		lf := logging.NewDefaultLoggerFactory()
		lf.DefaultLogLevel = logging.LogLevelDisabled
		c, err := pturn.NewClient(&pturn.ClientConfig{TURNServerAddr: addr, STUNServerAddr: addr, Conn: conn,
			Username: minted.Username, Password: minted.Credential, LoggerFactory: lf, RTO: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Listen(); err != nil {
			t.Fatal(err)
		}
		relay, err := c.Allocate()
		if err != nil {
			t.Fatalf("allocate over %s with the welcome's credentials: %v", transport, err)
		}
		defer func() { c.Close(); _ = conn.Close() }()
		// turn-allow-peer admits 127.0.0.3; a private address stays refused,
		// and so does 127.0.0.1 (the server's own) except at the SFU's port
		// and relays' ports: a datagram to its port 9 is dropped.
		if err := c.CreatePermission(&net.UDPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 9}); err == nil {
			t.Fatal("permission for 10.1.2.3 granted")
		}
		before := srv.TURN().Stats().RefusedPackets
		if _, err := relay.WriteTo([]byte("to the discard port"), &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9}); err != nil {
			t.Fatal(err)
		}
		peer, err := net.ListenPacket("udp4", "127.0.0.3:0")
		if err != nil {
			t.Fatal(err)
		}
		defer peer.Close()
		buf := make([]byte, 100)
		for i := 0; ; i++ {
			if _, err := relay.WriteTo([]byte("to the allowed peer"), peer.LocalAddr()); err != nil {
				t.Fatal(err)
			}
			_ = peer.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
			if _, _, err := peer.ReadFrom(buf); err == nil {
				break
			} else if i == 10 {
				t.Fatalf("over %s: nothing relayed to the allowed peer: %v", transport, err)
			}
		}
		if srv.TURN().Stats().RefusedPackets == before {
			t.Fatalf("over %s: the datagram to 127.0.0.1:9 was not refused", transport)
		}
	}
	m := scrape(t, srv)
	if m["podium_turn_allocations"] != 2 || m[`podium_turn_refused_total{stage="permission"}`] < 2 || m[`podium_turn_refused_total{stage="packet"}`] < 2 || m[`podium_turn_relayed_bytes_total{direction="to-peers"}`] == 0 {
		t.Fatalf("podium_turn_allocations %v, refused permissions %v, relayed %v", m["podium_turn_allocations"],
			m[`podium_turn_refused_total{stage="permission"}`], m[`podium_turn_relayed_bytes_total{direction="to-peers"}`])
	}
	for _, name := range []string{`podium_turn_relayed_bytes_total{direction="to-peers"}`, `podium_turn_refused_total{stage="permission"}`,
		`podium_turn_auth_failures_total{reason="expired"}`, "podium_turn_quota_refused_total"} {
		if _, ok := m[name]; !ok {
			t.Errorf("no %s", name)
		}
	}
}

// Static credentials go with external TURN URLs as configured; without a
// TURN server nothing is minted.
func TestStaticICEServers(t *testing.T) {
	srv := startServerWith(t, Options{}, func(c *config.Config) {
		c.ICEServers = []string{"turn:turn.example.org:3478?transport=tcp"}
		c.ICEUsername, c.ICECredential = "alice", "wonderland"
	})
	welcome := joinWelcome(t, srv, "static-room")
	if len(welcome.ICEServers) != 1 || welcome.ICEServers[0].Username != "alice" || welcome.ICEServers[0].Credential != "wonderland" {
		t.Fatalf("ice servers %+v", welcome.ICEServers)
	}
	if srv.TURN() != nil {
		t.Fatal("the embedded TURN server runs without a port")
	}
}

// joinWelcome joins room and returns the welcome.
func joinWelcome(t *testing.T, srv *Server, room string) signal.Welcome {
	t.Helper()
	rc := dialRaw(t, srv)
	rc.send(mustEncode(t, signal.TypeJoin, signal.Join{Version: signal.Version, Room: room, Name: "Ann"}))
	m := rc.waitFor("welcome", func(m serverMsg) bool { return m.Type == signal.TypeWelcome })
	var w signal.Welcome
	if err := json.Unmarshal(m.raw, &w); err != nil {
		t.Fatal(err)
	}
	return w
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func mustEncode(t *testing.T, typ string, v any) []byte {
	t.Helper()
	f, err := signal.Encode(typ, v)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestRelayOnlyClientThroughTURNOverTCP: a pion client that may use relay
// candidates only, given the embedded TURN server over TCP alone, publishes
// to and receives from the SFU through it.
func TestRelayOnlyClientThroughTURNOverTCP(t *testing.T) {
	srv := startServerWith(t, Options{}, func(c *config.Config) { c.TURNTCPPort = freePort(t) })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ann, err := client.Dial(ctx, client.Options{URL: wsURL(srv), Room: "relay-room", Name: "Ann", Publish: true, RelayOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ann.Close)
	bob := dial(t, srv, "relay-room", "Bob", true)
	annID, bobID := ann.Snapshot().ID, bob.Snapshot().ID
	waitFor(t, ann, "Ann receives Bob through TURN", 20*time.Second, receiving(bobID))
	waitFor(t, bob, "Bob receives Ann, relayed", 20*time.Second, receiving(annID))
	st := srv.TURN().Stats()
	if st.Allocations < 2 || st.BytesToPeers < 20_000 || st.BytesFromPeers < 20_000 {
		t.Fatalf("TURN: %+v; want Ann's two connections relayed both ways", st)
	}
	t.Logf("TURN: %d allocations, %d B to the SFU, %d B from it", st.Allocations, st.BytesToPeers, st.BytesFromPeers)
}
