package server

import (
	"context"
	"encoding/binary"
	"net"
	"net/netip"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/pion/interceptor"
	"github.com/pion/transport/v4"
	"github.com/pion/transport/v4/stdnet"
	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/client"
	"github.com/podium-sfu/podium/internal/signal"
)

// socketsNet is the operating system's network, remembering the local address
// of every UDP socket a client's ICE agent opens: the addresses the server
// sees that client's media come from.
type socketsNet struct {
	*stdnet.Net
	mu    sync.Mutex
	addrs []netip.AddrPort
}

func (n *socketsNet) ListenUDP(network string, laddr *net.UDPAddr) (transport.UDPConn, error) {
	c, err := n.Net.ListenUDP(network, laddr)
	if err == nil {
		if a, ok := c.LocalAddr().(*net.UDPAddr); ok && a.IP.To4() != nil {
			n.mu.Lock()
			n.addrs = append(n.addrs, a.AddrPort())
			n.mu.Unlock()
		}
	}
	return c, err
}

func (n *socketsNet) sockets() []netip.AddrPort {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]netip.AddrPort(nil), n.addrs...)
}

// observedAPI is the test client's API (as client.NewAPI makes it) on a
// socketsNet.
func observedAPI(t *testing.T) (*webrtc.API, *socketsNet) {
	t.Helper()
	base, err := stdnet.NewNet()
	if err != nil {
		t.Fatal(err)
	}
	n := &socketsNet{Net: base}
	m := &webrtc.MediaEngine{}
	if err := m.RegisterDefaultCodecs(); err != nil {
		t.Fatal(err)
	}
	if err := m.RegisterHeaderExtension(webrtc.RTPHeaderExtensionCapability{URI: client.AudioLevelURI}, webrtc.RTPCodecTypeAudio); err != nil {
		t.Fatal(err)
	}
	r := &interceptor.Registry{}
	if err := webrtc.RegisterDefaultInterceptors(m, r); err != nil {
		t.Fatal(err)
	}
	var s webrtc.SettingEngine
	s.SetIncludeLoopbackCandidate(true)
	s.SetNetworkTypes([]webrtc.NetworkType{webrtc.NetworkTypeUDP4})
	s.SetNet(n)
	return webrtc.NewAPI(webrtc.WithMediaEngine(m), webrtc.WithInterceptorRegistry(r), webrtc.WithSettingEngine(s)), n
}

// forgedRecords are plaintext (epoch 0) DTLS records, sequence number 1000
// (above any the handshake used), each of which ends a connection whose pion
// reads it after the handshake: an alert (pion closes; for close_notify it
// answers the real peer with a genuine one), application data or an unknown
// content type (pion sends the real peer a fatal alert). The last is a
// handshake fragment and an alert in one datagram.
var forgedRecords = [][]byte{
	{21, 0xfe, 0xfd, 0, 0, 0, 0, 0, 0, 0x03, 0xe8, 0, 2, 1, 0},  // warning close_notify
	{21, 0xfe, 0xfd, 0, 0, 0, 0, 0, 0, 0x03, 0xe9, 0, 2, 2, 40}, // fatal handshake_failure
	{23, 0xfe, 0xfd, 0, 0, 0, 0, 0, 0, 0x03, 0xea, 0, 2, 1, 0},  // application data
	{30, 0xfe, 0xfd, 0, 0, 0, 0, 0, 0, 0x03, 0xeb, 0, 2, 1, 0},  // unknown type
	{
		22, 0xfe, 0xfd, 0, 0, 0, 0, 0, 0, 0x03, 0xec, 0, 1, 0,
		21, 0xfe, 0xfd, 0, 0, 0, 0, 0, 0, 0x03, 0xed, 0, 2, 1, 0,
	},
}

// forgeUDP sends payload from src to dst through a raw IPv4 socket, as an
// off-path attacker who spoofs the source address would (needs root).
func forgeUDP(t *testing.T, src, dst netip.AddrPort, payload []byte) {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_RAW, syscall.IPPROTO_RAW)
	if err != nil {
		t.Skipf("raw socket (needs root): %v", err)
	}
	defer syscall.Close(fd)
	pkt := make([]byte, 28+len(payload))
	pkt[0] = 0x45                                                // IPv4, 20-byte header
	binary.BigEndian.PutUint16(pkt[2:], uint16(len(pkt)))        // total length
	pkt[8] = 64                                                  // TTL
	pkt[9] = syscall.IPPROTO_UDP                                 // protocol
	copy(pkt[12:16], src.Addr().AsSlice())                       // source: the victim
	copy(pkt[16:20], dst.Addr().AsSlice())                       // destination: the SFU
	binary.BigEndian.PutUint16(pkt[20:], src.Port())             // UDP source port
	binary.BigEndian.PutUint16(pkt[22:], dst.Port())             // UDP destination port
	binary.BigEndian.PutUint16(pkt[24:], uint16(8+len(payload))) // UDP length; checksum 0: none
	copy(pkt[28:], payload)
	to := &syscall.SockaddrInet4{Addr: dst.Addr().As4()}
	if err := syscall.Sendto(fd, pkt, 0, to); err != nil {
		t.Fatalf("forge %v -> %v: %v", src, dst, err)
	}
}

func mediaAddr(t *testing.T, s *Server) netip.AddrPort {
	t.Helper()
	for _, a := range s.MediaAddrs() {
		if u, ok := a.(*net.UDPAddr); ok && u.IP.To4() != nil {
			return u.AddrPort()
		}
	}
	t.Fatal("no IPv4 media address")
	return netip.AddrPort{}
}

// packets is how many video packets of source c has received.
func videoPackets(c *client.Client, source string) int {
	if tr := c.Snapshot().Tracks["video-"+source]; tr != nil {
		return tr.Packets
	}
	return 0
}

// A forged plaintext close_notify from the publisher's address, sent after
// the handshake, does not stop its media.
func TestForgedDTLSAlertDoesNotStopMedia(t *testing.T) {
	srv := startServer(t, Options{})
	api, sockets := observedAPI(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a, err := client.Dial(ctx, client.Options{URL: wsURL(srv), Room: "forge", Name: "A", Publish: true, API: api})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	b := dial(t, srv, "forge", "B", false)
	aID := a.Snapshot().ID
	waitFor(t, b, "B receives A", 10*time.Second, receiving(aID))

	// From each of A's sockets (pion takes DTLS from every address A's ICE
	// checks came from, not only the selected pair's).
	sfu := mediaAddr(t, srv)
	dropped := srv.engine.ForgedRecordsDropped()
	sent := 0
	for _, src := range sockets.sockets() {
		for _, rec := range forgedRecords {
			forgeUDP(t, src, sfu, rec)
			sent++
		}
	}
	time.Sleep(time.Second) // what a record would stop has stopped by now
	for i := range 4 {
		before := videoPackets(b, aID)
		time.Sleep(time.Second)
		after := videoPackets(b, aID)
		t.Logf("second %d after the forgery: %d video packets", i+2, after-before)
		if after-before < 20 {
			t.Fatalf("media stopped after forged DTLS records: %d video packets in second %d", after-before, i+2)
		}
	}
	if got := srv.engine.ForgedRecordsDropped() - dropped; got != uint64(sent) {
		t.Errorf("%d forged datagrams dropped, want %d", got, sent)
	}
	if errs := a.Snapshot().Errors; len(errs) > 0 {
		t.Errorf("A was told %v", errs)
	}
}

// A transport that really dies is restarted at once: the publisher's own DTLS
// is ended (a plaintext close_notify forged to it from the SFU's address,
// which its pion takes; it closes and sends the SFU a genuine close_notify),
// the SFU's connection closes, the session tells the client transport-failed,
// and the client's reconnect with its resume id restores the media.
func TestDeadTransportIsRestartedQuickly(t *testing.T) {
	srv := startServer(t, Options{})
	api, sockets := observedAPI(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a, err := client.Dial(ctx, client.Options{URL: wsURL(srv), Room: "dies", Name: "A", Publish: true, API: api})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	b := dial(t, srv, "dies", "B", false)
	aID := a.Snapshot().ID
	waitFor(t, b, "B receives A", 10*time.Second, receiving(aID))

	sfu := mediaAddr(t, srv)
	killed := time.Now()
	for _, dst := range sockets.sockets() {
		forgeUDP(t, sfu, dst, forgedRecords[0])
	}
	transportFailed := func(s *client.State) bool {
		for _, e := range s.Errors {
			if e.Code == signal.CodeTransportFailed && e.Fatal {
				return true
			}
		}
		return false
	}
	// The SFU notices within moments; an ICE timeout would take 30 s.
	waitFor(t, a, "A told its transport failed", 3*time.Second, transportFailed)
	noticed := time.Now()

	// What the web client does on transport-failed: reconnect with resume
	// (its first reconnect waits 300 ms; counted here).
	time.Sleep(300 * time.Millisecond)
	a.Close()
	a2 := redial(t, srv, "dies", "A", a.Snapshot().Resume)
	if got := a2.Snapshot().ID; got != aID {
		t.Fatalf("resumed as %q, want %q", got, aID)
	}
	waitFor(t, b, "B receives A again", 5*time.Second, func(s *client.State) bool {
		tr := s.Tracks["video-"+aID]
		return tr != nil && tr.FirstSeen.After(noticed) && tr.Packets >= 5
	})
	restored := time.Since(noticed)
	t.Logf("noticed %v after the DTLS close; media restored %v after noticing", noticed.Sub(killed).Round(time.Millisecond), restored.Round(time.Millisecond))
	// 2 s on a busy two-core machine; typically about half that.
	if restored > 2*time.Second {
		t.Errorf("media restored %v after the SFU noticed, want ≤ 2 s", restored)
	}
}
