package turn

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"

	"math/big"
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pion/logging"
	pturn "github.com/pion/turn/v5"
)

// The tests run a real server and real pion/turn clients on loopback. The
// server listens on 127.0.0.1 and relays from 127.0.0.2 (both its own
// addresses); peers listen on 127.0.0.3, which only turn-allow-peer admits,
// and ownPublic stands for the server's public address.
var (
	relayIP   = netip.MustParseAddr("127.0.0.2")
	peerIP    = netip.MustParseAddr("127.0.0.3")
	ownPublic = netip.MustParseAddr("203.0.114.7")
)

const relayMin, relayMax = 41000, 41999

func startTURN(t *testing.T, change func(*Config)) *Server {
	t.Helper()
	own := []netip.Addr{netip.MustParseAddr("127.0.0.1"), ownPublic}
	if addrs, err := OwnAddrs(); err == nil {
		own = append(own, addrs...)
	}
	cfg := Config{
		Realm: "podium", Secret: secret,
		UDPAddr: "127.0.0.1:0", TCPAddr: "127.0.0.1:0",
		RelayBind: relayIP.String(), PublicIP: net.IP(relayIP.AsSlice()),
		RelayMin: relayMin, RelayMax: relayMax,
		Peers:          PolicyParams{Own: own, RelayIPs: []netip.Addr{relayIP}, Allow: []netip.Prefix{netip.PrefixFrom(peerIP, 32)}},
		MaxAllocations: 4, MaxLifetime: time.Hour,
	}
	change(&cfg)
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

// client connects to srv over transport ("udp", "tcp" or "tls") with a username and password.
func client(t *testing.T, srv *Server, transport, username, password string) *pturn.Client {
	t.Helper()
	var conn net.PacketConn
	var addr string
	switch transport {
	case "udp":
		pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		conn, addr = pc, srv.UDPAddr().String()
	case "tcp":
		c, err := net.Dial("tcp", srv.TCPAddr().String())
		if err != nil {
			t.Fatal(err)
		}
		conn, addr = pturn.NewSTUNConn(c), srv.TCPAddr().String()
	case "tls":
		c, err := tls.Dial("tcp", srv.TLSAddr().String(), &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // the test's own certificate
		if err != nil {
			t.Fatal(err)
		}
		conn, addr = pturn.NewSTUNConn(c), srv.TLSAddr().String()
	}
	lf := logging.NewDefaultLoggerFactory()
	lf.DefaultLogLevel = logging.LogLevelDisabled
	c, err := pturn.NewClient(&pturn.ClientConfig{TURNServerAddr: addr, STUNServerAddr: addr, Conn: conn,
		Username: username, Password: password, Realm: "podium", LoggerFactory: lf, RTO: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Listen(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); _ = conn.Close() })
	return c
}

func minted(user string) (string, string) { return Mint(secret, user, time.Now().Add(time.Hour)) }

// peer is a UDP socket on an address relays may reach.
func peer(t *testing.T, ip netip.Addr) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(ip, 0)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// exchange sends one datagram each way between a relay and a peer. (At
// least 5 bytes: pion's TCP client waits for a 9th byte before it parses a
// frame, so a 4-byte payload in ChannelData would stay stuck.)
func exchange(t *testing.T, relay net.PacketConn, p *net.UDPConn) {
	t.Helper()
	buf := make([]byte, 1500)
	for i := 0; ; i++ { // the first datagram may race the permission
		if _, err := relay.WriteTo([]byte("ping through the relay"), p.LocalAddr()); err != nil {
			t.Fatalf("relay write: %v", err)
		}
		_ = p.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		n, from, err := p.ReadFrom(buf)
		if err == nil && string(buf[:n]) == "ping through the relay" {
			if from.String() != relay.LocalAddr().String() {
				t.Fatalf("peer got the datagram from %v, not the relay address %v", from, relay.LocalAddr())
			}
			break
		}
		if i == 10 {
			t.Fatalf("peer: nothing relayed: %v", err)
		}
	}
	if _, err := p.WriteTo([]byte("pong through the relay"), relay.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	_ = relay.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, _, err := relay.ReadFrom(buf)
	if err != nil || string(buf[:n]) != "pong through the relay" {
		t.Fatalf("client: %q %v, want the pong relayed back", buf[:n], err)
	}
}

func TestAllocateWithMintedCredentials(t *testing.T) {
	srv := startTURN(t, func(c *Config) { c.TLSAddr, c.TLS = "127.0.0.1:0", selfSigned(t) })
	for _, transport := range []string{"udp", "tcp", "tls"} {
		t.Run(transport, func(t *testing.T) {
			u, p := minted("p" + transport)
			relay, err := client(t, srv, transport, u, p).Allocate()
			if err != nil {
				t.Fatalf("allocate: %v", err)
			}
			if got := relay.LocalAddr().(*net.UDPAddr).AddrPort(); got.Addr() != relayIP || got.Port() < relayMin || got.Port() > relayMax {
				t.Fatalf("relay address %v, want %v in %d-%d", got, relayIP, relayMin, relayMax)
			}
			exchange(t, relay, peer(t, peerIP))
		})
	}
	if s := srv.Stats(); s.AllocationsTotal != 3 || s.BytesToPeers == 0 || s.BytesFromPeers == 0 {
		t.Fatalf("stats %+v", s)
	}
}

func TestBadCredentialsRefused(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	srv := startTURN(t, func(c *Config) { c.Now = func() time.Time { return now } })
	good, goodPass := Mint(secret, "alice", now.Add(time.Minute))
	expired, expiredPass := Mint(secret, "alice", now.Add(-time.Second))
	forged, forgedPass := Mint([]byte("not the server's secret, but long"), "alice", now.Add(time.Minute))
	for _, tc := range []struct {
		name, user, pass string
		counter          func(Stats) uint64
	}{
		{"expired", expired, expiredPass, func(s Stats) uint64 { return s.AuthExpired }},
		{"forged (another secret)", forged, forgedPass, func(s Stats) uint64 { return s.AuthIntegrity }},
		{"wrong password", good, expiredPass, func(s Stats) uint64 { return s.AuthIntegrity }},
		{"longer expiry, old password", "1900000000:alice", goodPass, func(s Stats) uint64 { return s.AuthIntegrity }},
		{"plain username", "alice", goodPass, func(s Stats) uint64 { return s.AuthMalformed }},
		{"another user's password", "1800000060:bob", goodPass, func(s Stats) uint64 { return s.AuthIntegrity }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.counter(srv.Stats())
			if _, err := client(t, srv, "udp", tc.user, tc.pass).Allocate(); err == nil {
				t.Fatal("allocation granted")
			}
			if tc.counter(srv.Stats()) == before {
				t.Fatalf("not counted: %+v", srv.Stats())
			}
		})
	}
	if _, err := client(t, srv, "tcp", good, goodPass).Allocate(); err != nil {
		t.Fatalf("the good credentials: %v", err)
	}
	if s := srv.Stats(); s.AllocationsTotal != 1 {
		t.Fatalf("%d allocations, want only the good one", s.AllocationsTotal)
	}
}

func TestPeersRefused(t *testing.T) {
	srv := startTURN(t, func(*Config) {})
	u, p := minted("mallory")
	c := client(t, srv, "udp", u, p)
	relay, err := c.Allocate()
	if err != nil {
		t.Fatal(err)
	}
	refused := []netip.Addr{
		netip.MustParseAddr("127.0.0.1"), netip.MustParseAddr("10.1.2.3"), netip.MustParseAddr("192.168.0.1"),
		netip.MustParseAddr("169.254.169.254"), netip.MustParseAddr("100.100.100.200"), ownPublic,
	}
	if addrs, err := OwnAddrs(); err == nil {
		for _, a := range addrs {
			if a.Is4() && !a.IsLoopback() {
				refused = append(refused, a) // the host's own interface address
				break
			}
		}
	}
	for _, ip := range refused {
		before := srv.Stats().RefusedPerms
		if err := c.CreatePermission(net.UDPAddrFromAddrPort(netip.AddrPortFrom(ip, 7882))); err == nil {
			t.Errorf("permission for %v granted", ip)
		}
		if srv.Stats().RefusedPerms == before {
			t.Errorf("refusal for %v not counted", ip)
		}
		// The client's Send creates the permission first: refused too.
		if _, err := relay.WriteTo([]byte("x"), net.UDPAddrFromAddrPort(netip.AddrPortFrom(ip, 7882))); err == nil {
			t.Errorf("send to %v accepted", ip)
		}
	}
	// The relay IP is the server's own: the permission stands (another
	// participant's relay lives there), but only live relays' ports are
	// reached. A service on that address gets nothing, here a UDP socket and
	// the TURN port itself; what was sent before the allowed datagram would
	// have arrived before it.
	service := peer(t, relayIP)
	turnPort := netip.AddrPortFrom(relayIP, uint16(srv.UDPAddr().(*net.UDPAddr).Port))
	before := srv.Stats().RefusedPackets
	for _, to := range []net.Addr{service.LocalAddr(), net.UDPAddrFromAddrPort(turnPort)} {
		if _, err := relay.WriteTo([]byte("secret"), to); err != nil {
			t.Fatalf("send to %v: %v", to, err) // the client cannot tell
		}
	}
	exchange(t, relay, peer(t, peerIP))
	_ = service.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if n, from, err := service.ReadFrom(make([]byte, 100)); err == nil {
		t.Fatalf("a service on the relay address outside the relay range got %d bytes from %v", n, from)
	}
	waitFor(t, "refused packets counted", func() bool { return srv.Stats().RefusedPackets >= before+2 })

	// Another participant's relay on the same address is reachable: two
	// clients that can only relay still reach each other.
	u2, p2 := minted("bob")
	c2 := client(t, srv, "tcp", u2, p2)
	other, err := c2.Allocate()
	if err != nil {
		t.Fatal(err)
	}
	if err := c2.CreatePermission(relay.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 100)
	for i := 0; ; i++ {
		if _, err := relay.WriteTo([]byte("relay to relay"), other.LocalAddr()); err != nil {
			t.Fatal(err)
		}
		_ = other.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		if n, _, err := other.ReadFrom(buf); err == nil && string(buf[:n]) == "relay to relay" {
			break
		} else if i == 10 {
			t.Fatalf("relay to relay: %v", err)
		}
	}
}

func TestAllocationQuotaPerUser(t *testing.T) {
	srv := startTURN(t, func(c *Config) { c.MaxAllocations = 2 })
	u, p := minted("greedy")
	var relays []net.PacketConn
	for i := range 2 {
		relay, err := client(t, srv, "udp", u, p).Allocate()
		if err != nil {
			t.Fatalf("allocation %d: %v", i+1, err)
		}
		relays = append(relays, relay)
	}
	if _, err := client(t, srv, "tcp", u, p).Allocate(); err == nil {
		t.Fatal("a third allocation for the same user granted")
	}
	if s := srv.Stats(); s.QuotaRefused == 0 || s.Allocations != 2 {
		t.Fatalf("stats %+v", s)
	}
	// Another user is not affected; a freed slot is free again.
	u2, p2 := minted("modest")
	if _, err := client(t, srv, "udp", u2, p2).Allocate(); err != nil {
		t.Fatalf("another user: %v", err)
	}
	_ = relays[0].Close() // deallocates (Refresh with lifetime 0)
	waitFor(t, "the slot freed", func() bool { return srv.Stats().Allocations == 2 })
	if _, err := client(t, srv, "udp", u, p).Allocate(); err != nil {
		t.Fatalf("after freeing one: %v", err)
	}
}

func TestAllocationLifetimeCap(t *testing.T) {
	srv := startTURN(t, func(c *Config) { c.MaxLifetime = 1500 * time.Millisecond })
	u, p := minted("stayer")
	relay, err := client(t, srv, "udp", u, p).Allocate()
	if err != nil {
		t.Fatal(err)
	}
	pr := peer(t, peerIP)
	exchange(t, relay, pr)
	start := time.Now()
	waitFor(t, "allocation closed at its lifetime cap", func() bool {
		s := srv.Stats()
		return s.Allocations == 0 && s.LifetimeClosed == 1
	})
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("closed after %v", el)
	}
	// What the peer sends to the old relay address reaches nobody.
	if _, err := pr.WriteTo([]byte("late"), relay.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	_ = relay.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if _, _, err := relay.ReadFrom(make([]byte, 100)); err == nil {
		t.Fatal("relayed after the lifetime cap")
	}
}

// TestBandwidthLimit offers 4x an allocation's bandwidth in each direction
// for 3 s and measures what comes through after the first second.
func TestBandwidthLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("3 s of traffic")
	}
	const bps = 800_000 // 100 kB/s
	srv := startTURN(t, func(c *Config) { c.Bandwidth = bps })
	u, p := minted("streamer")
	relay, err := client(t, srv, "udp", u, p).Allocate()
	if err != nil {
		t.Fatal(err)
	}
	pr := peer(t, peerIP)
	exchange(t, relay, pr)
	measure := func(name string, send func([]byte) error, recv net.PacketConn) {
		var got atomic.Int64
		start := time.Now()
		done := make(chan struct{})
		go func() {
			defer close(done)
			buf := make([]byte, 2000)
			for {
				_ = recv.SetReadDeadline(time.Now().Add(time.Second))
				n, _, err := recv.ReadFrom(buf)
				if err != nil {
					return
				}
				if time.Since(start) > time.Second {
					got.Add(int64(n))
				}
			}
		}()
		pkt := make([]byte, 1000)
		tick := time.NewTicker(10 * time.Millisecond) // 4 packets a tick: 400 kB/s offered
		offered := 0
		for time.Since(start) < 3*time.Second {
			<-tick.C
			for range 4 {
				if err := send(pkt); err != nil {
					t.Fatal(err)
				}
				offered += len(pkt)
			}
		}
		tick.Stop()
		offeredRate := float64(offered) / time.Since(start).Seconds()
		<-done
		rate := float64(got.Load()) / 2 // bytes/s over seconds 1 to 3
		t.Logf("%s: offered %.0f kB/s, relayed %.1f kB/s (limit %d kB/s)", name, offeredRate/1000, rate/1000, bps/8/1000)
		if offeredRate < 2*bps/8 {
			t.Fatalf("%s: could offer only %.0f kB/s, not twice the limit: the machine is too busy for this measurement", name, offeredRate/1000)
		}
		if rate < 0.75*bps/8 || rate > 1.25*bps/8 {
			t.Errorf("%s: %.1f kB/s relayed, want %d kB/s ± 25 %%", name, rate/1000, bps/8/1000)
		}
	}
	measure("client to peer", func(b []byte) error { _, err := relay.WriteTo(b, pr.LocalAddr()); return err }, pr)
	measure("peer to client", func(b []byte) error { _, err := pr.WriteTo(b, relay.LocalAddr()); return err }, relay)
	if s := srv.Stats(); s.OverBandwidth == 0 {
		t.Fatalf("nothing counted over the bandwidth: %+v", s)
	}
}

func TestTCPRelaysRefused(t *testing.T) {
	srv := startTURN(t, func(*Config) {})
	u, p := minted("tcpuser")
	if _, err := client(t, srv, "tcp", u, p).AllocateTCP(); err == nil {
		t.Fatal("a TCP relay (RFC 6062) was allocated")
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10 s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func selfSigned(t *testing.T) *tls.Config {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "turn.test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), DNSNames: []string{"turn.test"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}, MinVersion: tls.VersionTLS12}
}
