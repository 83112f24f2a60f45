package peer

import (
	"bytes"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/pion/stun/v4"
	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/wire"
)

const (
	ourUfrag, ourPwd     = "srvu", "server-password-24-chars"
	theirUfrag, theirPwd = "cliu", "client-password-24-chars"
)

// consentRig is a consent whose pair runs between two loopback sockets: ours
// (a wire.Socket) and the peer's, which reads what we send.
type consentRig struct {
	c        *consent
	route    *wire.Route
	sock     *wire.Socket
	peer     *net.UDPConn
	peerAddr netip.AddrPort
	out      *wire.Batch
}

func newConsentRig(t testing.TB) *consentRig {
	t.Helper()
	ours, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ours.Close() })
	peer, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = peer.Close() })
	sock, err := wire.NewSocket(ours)
	if err != nil {
		t.Fatal(err)
	}
	r := &consentRig{route: &wire.Route{}, sock: sock, peer: peer, out: wire.NewBatch(8),
		peerAddr: peer.LocalAddr().(*net.UDPAddr).AddrPort()}
	r.c = newConsent(r.route, &consentCounts{})
	r.c.creds.Store(newICECreds(webrtc.ICEParameters{UsernameFragment: ourUfrag, Password: ourPwd},
		webrtc.ICEParameters{UsernameFragment: theirUfrag, Password: theirPwd}, true))
	r.c.moveTo(wire.NewDest(sock, r.peerAddr))
	return r
}

// received flushes what we queued and decodes what the peer got.
func (r *consentRig) received(t *testing.T) *stun.Message {
	t.Helper()
	if r.out.Flush() != 1 {
		t.Fatal("nothing sent")
	}
	buf := make([]byte, 1500)
	_ = r.peer.SetReadDeadline(time.Now().Add(2 * time.Second))
	n, err := r.peer.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	m := &stun.Message{Raw: buf[:n]}
	if err := m.Decode(); err != nil {
		t.Fatal(err)
	}
	return m
}

// theirCheck is a check from the peer as pion's controlled agent sends it.
func theirCheck(t testing.TB, username string, role stun.Setter) []byte {
	t.Helper()
	m, err := stun.Build(stun.BindingRequest, stun.TransactionID, stun.NewUsername(username), role,
		stun.NewShortTermIntegrity(ourPwd), stun.Fingerprint)
	if err != nil {
		t.Fatal(err)
	}
	return m.Raw
}

var controlled = stun.RawAttribute{Type: 0x8029, Value: []byte{1, 2, 3, 4, 5, 6, 7, 8}}

func TestConsentAnswersThePeersChecks(t *testing.T) {
	r := newConsentRig(t)
	now := time.Unix(1000, 0)
	r.c.nextCheck.Store(now.Add(time.Hour).UnixNano()) // our own checks: the next test

	b := theirCheck(t, ourUfrag+":"+theirUfrag, controlled)
	tx := bytes.Clone(b[8:20])
	if v := r.c.take(b, r.sock, r.peerAddr, now, r.out); v != indicatedToPion {
		t.Fatalf("verdict %v, want the check answered and pion told", v)
	}
	ind := &stun.Message{Raw: b[:wire.STUNHeaderLen]}
	if err := ind.Decode(); err != nil || ind.Type != (stun.MessageType{Method: stun.MethodBinding, Class: stun.ClassIndication}) {
		t.Fatalf("pion gets %v (%v), want a binding indication", ind.Type, err)
	}
	answer := r.received(t)
	if answer.Type != stun.BindingSuccess || !bytes.Equal(answer.TransactionID[:], tx) {
		t.Fatalf("answer %v for transaction %x", answer, answer.TransactionID)
	}
	if err := stun.NewShortTermIntegrity(ourPwd).Check(answer); err != nil {
		t.Fatal("answer not signed with our password:", err)
	}
	var mapped stun.XORMappedAddress
	if err := mapped.GetFrom(answer); err != nil || mapped.Port != int(r.peerAddr.Port()) || !mapped.IP.Equal(net.IPv4(127, 0, 0, 1)) {
		t.Fatalf("mapped %v, want %v", mapped, r.peerAddr)
	}

	// Within a second pion is not told again.
	b = theirCheck(t, ourUfrag+":"+theirUfrag, controlled)
	if v := r.c.take(b, r.sock, r.peerAddr, now.Add(500*time.Millisecond), r.out); v != takenHere {
		t.Fatalf("second check: verdict %v, want taken", v)
	}
	r.received(t)
	if r.c.counts.answered.Load() != 2 {
		t.Fatalf("%d answered", r.c.counts.answered.Load())
	}

	// What is not ours to vouch for goes to pion as it came.
	other, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	otherSock, err := wire.NewSocket(other)
	if err != nil {
		t.Fatal(err)
	}
	forged, err := stun.Build(stun.BindingRequest, stun.TransactionID, stun.NewUsername(ourUfrag+":"+theirUfrag), controlled,
		stun.NewShortTermIntegrity("not-the-password-at-all!"), stun.Fingerprint)
	if err != nil {
		t.Fatal(err)
	}
	later := now.Add(5 * time.Second)
	for name, c := range map[string]struct {
		b    []byte
		sock *wire.Socket
	}{
		"other credentials (an ICE restart)": {theirCheck(t, "new0:"+theirUfrag, controlled), r.sock},
		"a role conflict":                    {theirCheck(t, ourUfrag+":"+theirUfrag, stun.RawAttribute{Type: 0x802A, Value: make([]byte, 8)}), r.sock},
		"no role":                            {theirCheck(t, ourUfrag+":"+theirUfrag, stun.NewSoftware("x")), r.sock},
		"another pair (our other socket)":    {theirCheck(t, ourUfrag+":"+theirUfrag, controlled), otherSock},
		"a forged integrity":                 {forged.Raw, r.sock},
	} {
		orig := bytes.Clone(c.b)
		if v := r.c.take(c.b, c.sock, r.peerAddr, later, r.out); v != passToPion || !bytes.Equal(c.b, orig) || r.out.Len() != 0 {
			t.Errorf("%s: verdict %v, %d queued; want pion to get it untouched", name, v, r.out.Len())
		}
	}
	if v := r.c.take(wire.AppendBindingIndication(nil, make([]byte, 12)), r.sock, r.peerAddr, later, r.out); v != takenHere {
		t.Errorf("the peer's binding indication (unauthenticated): verdict %v, want dropped", v)
	}
	r.c.creds.Store(nil)
	if v := r.c.take(theirCheck(t, ourUfrag+":"+theirUfrag, controlled), r.sock, r.peerAddr, later, r.out); v != passToPion {
		t.Errorf("before the credentials are known: verdict %v", v)
	}
}

func TestConsentChecksThePeerAndTimesTheAnswer(t *testing.T) {
	r := newConsentRig(t)
	now := time.Unix(1000, 0)
	if !r.c.due(now) {
		t.Fatal("no check due on a new pair")
	}
	r.c.check(now, r.out)
	req := r.received(t)
	if req.Type != stun.BindingRequest {
		t.Fatalf("sent %v", req.Type)
	}
	var user stun.Username
	if err := user.GetFrom(req); err != nil || user.String() != theirUfrag+":"+ourUfrag {
		t.Fatalf("username %q %v", user, err)
	}
	if err := stun.NewShortTermIntegrity(theirPwd).Check(req); err != nil {
		t.Fatal("check not signed with the peer's password:", err)
	}
	if !req.Contains(0x802A) { // ICE-CONTROLLING: our role
		t.Fatal("no ICE-CONTROLLING")
	}
	if r.c.due(now.Add(consentInterval - time.Millisecond)) {
		t.Fatal("the next check due before the interval")
	}

	answer := func(tx [stun.TransactionIDSize]byte, pwd string) []byte {
		m, err := stun.Build(stun.NewTransactionIDSetter(tx), stun.BindingSuccess,
			&stun.XORMappedAddress{IP: net.IPv4(127, 0, 0, 1), Port: 9}, stun.NewShortTermIntegrity(pwd), stun.Fingerprint)
		if err != nil {
			t.Fatal(err)
		}
		return m.Raw
	}
	if v := r.c.take(answer(req.TransactionID, "wrong-password-24-chars!"), r.sock, r.peerAddr, now, r.out); v != passToPion {
		t.Fatalf("a forged answer: verdict %v", v)
	}
	if v := r.c.take(answer([12]byte{1}, theirPwd), r.sock, r.peerAddr, now, r.out); v != passToPion {
		t.Fatalf("an answer to another transaction (pion's): verdict %v", v)
	}
	if _, ok := r.route.RTT(); ok {
		t.Fatal("an RTT before our answer")
	}
	if v := r.c.take(answer(req.TransactionID, theirPwd), r.sock, r.peerAddr, now.Add(37*time.Millisecond), r.out); v != indicatedToPion {
		t.Fatalf("our answer: verdict %v", v)
	}
	if rtt, ok := r.route.RTT(); !ok || rtt != 37*time.Millisecond {
		t.Fatalf("RTT %v %v, want 37ms", rtt, ok)
	}
	if v := r.c.take(answer(req.TransactionID, theirPwd), r.sock, r.peerAddr, now.Add(40*time.Millisecond), r.out); v != passToPion {
		t.Fatalf("the same answer again: verdict %v", v)
	}
	if r.c.counts.confirmed.Load() != 1 {
		t.Fatalf("%d confirmed", r.c.counts.confirmed.Load())
	}
}

// The reader's side of consent allocates nothing: an answered check, our
// check and its answer.
func TestConsentDoesNotAllocate(t *testing.T) {
	r := newConsentRig(t)
	check := theirCheck(t, ourUfrag+":"+theirUfrag, controlled)
	b := make([]byte, len(check))
	now := time.Unix(1000, 0)
	var ans [1500]byte
	allocs := testing.AllocsPerRun(100, func() {
		now = now.Add(consentInterval)
		copy(b, check)
		if r.c.take(b, r.sock, r.peerAddr, now, r.out) == passToPion {
			t.Fatal("refused")
		}
		r.c.check(now, r.out)
		r.out.Flush()
		// the peer's answer to our check
		a := wire.AppendBindingSuccess(ans[:0], r.c.txID[:], r.peerAddr, r.c.creds.Load().theirs)
		if r.c.take(a, r.sock, r.peerAddr, now, r.out) == passToPion {
			t.Fatal("answer refused")
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations", allocs)
	}
}

// Between our engine and a pion peer the data plane answers the peer's checks
// and sends its own, and pion, which sends no keepalive pings, stays
// connected: the peer's checks reach it as indications. The peer's timeouts
// are short (a second), so it fails unless our answers reach it; ours are
// shortened to 3 s, so without the indications our side would go
// disconnected within 6 s.
func TestConsentKeepsAPionConnectionUp(t *testing.T) {
	if testing.Short() {
		t.Skip("8 s")
	}
	defer func(d time.Duration) { disconnectedTimeout = d }(disconnectedTimeout)
	disconnectedTimeout = 3 * time.Second
	e, err := NewEngine(Config{UDPPort: freePort(t), BindIPs: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if !e.consentAtSocket {
		t.Skipf("%s=%s: pion keeps consent", PionDataPlaneEnv, dataPlaneMode())
	}
	ours, err := e.NewSubscribePC()
	if err != nil {
		t.Fatal(err)
	}
	defer ours.Close()
	states := make(chan webrtc.ICEConnectionState, 16)
	ours.OnICEConnectionStateChange(func(s webrtc.ICEConnectionState) { states <- s })
	route := e.Route(ours, func(time.Time, []byte, *wire.Batch) {})
	if _, err := ours.AddTransceiverFromKind(webrtc.RTPCodecTypeAudio); err != nil {
		t.Fatal(err)
	}

	theirs := loopbackPeer(t, func(s *webrtc.SettingEngine) { s.SetICETimeouts(time.Second, time.Second, 200*time.Millisecond) })
	theirStates := make(chan webrtc.ICEConnectionState, 16)
	theirs.OnICEConnectionStateChange(func(s webrtc.ICEConnectionState) { theirStates <- s })
	negotiate(t, ours, theirs)

	deadline := time.After(10 * time.Second)
	for connected := false; !connected; {
		select {
		case st := <-states:
			connected = st == webrtc.ICEConnectionStateConnected
		case <-deadline:
			t.Fatal("not connected")
		}
	}
	for _, ok := route.RTT(); !ok; _, ok = route.RTT() {
		select {
		case <-deadline:
			t.Fatal("no round-trip time from our consent checks")
		case <-time.After(10 * time.Millisecond):
		}
	}
	pairs := func() uint64 {
		p, ok := ours.SCTP().Transport().ICETransport().GetSelectedCandidatePairStats()
		if !ok {
			t.Fatal("no selected pair")
		}
		return p.RequestsSent
	}
	pionsPings := pairs()
	answered0, sent0, confirmed0 := e.ConsentChecks()
	time.Sleep(8 * time.Second)

	for len(states) > 0 {
		t.Errorf("our connection went %v", <-states)
	}
	for len(theirStates) > 0 {
		if st := <-theirStates; st != webrtc.ICEConnectionStateConnected && st != webrtc.ICEConnectionStateChecking {
			t.Errorf("the peer's connection went %v", st)
		}
	}
	if got := pairs(); got != pionsPings {
		t.Errorf("pion sent %d keepalive pings", got-pionsPings)
	}
	answered, sent, confirmed := e.ConsentChecks()
	t.Logf("in 8 s: %d of the peer's checks answered, %d of ours sent, %d answered", answered-answered0, sent-sent0, confirmed-confirmed0)
	if answered-answered0 < 25 || sent-sent0 < 2 || confirmed-confirmed0 < 2 {
		t.Error("too few checks")
	}
	if rtt, _ := route.RTT(); rtt <= 0 || rtt > 100*time.Millisecond {
		t.Errorf("RTT %v on loopback", rtt)
	}
}

// FuzzConsentTake: any datagram from the peer is handled without panicking;
// one left to pion is untouched, and one pion is told of becomes a bare
// binding indication.
func FuzzConsentTake(f *testing.F) {
	r := newConsentRig(f)
	f.Add(theirCheck(f, ourUfrag+":"+theirUfrag, controlled))
	f.Add(wire.AppendBindingSuccess(nil, make([]byte, 12), r.peerAddr, r.c.creds.Load().theirs))
	f.Add(wire.AppendBindingIndication(nil, make([]byte, 12)))
	now := time.Unix(1000, 0)
	f.Fuzz(func(t *testing.T, b []byte) {
		now = now.Add(consentInterval)
		r.c.check(now, r.out)
		orig := bytes.Clone(b)
		switch r.c.take(b, r.sock, r.peerAddr, now, r.out) {
		case passToPion:
			if !bytes.Equal(b, orig) {
				t.Fatal("a datagram left to pion was modified")
			}
		case indicatedToPion:
			m, err := wire.ParseSTUN(b[:wire.STUNHeaderLen])
			if err != nil || m.Type != wire.STUNBindingIndication {
				t.Fatalf("pion told with %x (%v)", b[:wire.STUNHeaderLen], err)
			}
		}
		r.out.Flush()
	})
}

// The consent loop checks a peer that sends nothing on the selected pair (a
// controlling browser may send its media on another): its check goes out all
// the same, and the next one not before consentInterval.
func TestConsentLoopChecksASilentPeer(t *testing.T) {
	r := newConsentRig(t)
	in := newIngress(newArrivals())
	c := &inConn{consent: r.c}
	in.set(r.peerAddr, c, c)
	done := make(chan struct{})
	go in.consentLoop(done)
	defer close(done)
	buf := make([]byte, 1500)
	_ = r.peer.SetReadDeadline(time.Now().Add(3 * consentTick))
	n, err := r.peer.Read(buf)
	if err != nil {
		t.Fatal("no check from the loop:", err)
	}
	m := &stun.Message{Raw: buf[:n]}
	if err := m.Decode(); err != nil || m.Type != stun.BindingRequest {
		t.Fatalf("sent %v (%v)", m.Type, err)
	}
	_ = r.peer.SetReadDeadline(time.Now().Add(consentInterval - 2*consentTick))
	if _, err := r.peer.Read(buf); err == nil {
		t.Fatal("a second check within the interval")
	}
}

// Behind 1:1 NAT a pair's local candidate carries the public address; the
// data plane finds the socket behind it, so such pairs are followed too.
func TestBehindNATFindsTheLocalSocket(t *testing.T) {
	one := []netip.Addr{netip.MustParseAddr("10.0.0.5")}
	two := append(one, netip.MustParseAddr("10.0.1.5"))
	for _, c := range []struct {
		public []string
		bound  []netip.Addr
		in     string
		want   string
	}{
		{[]string{"203.0.113.9/10.0.0.5"}, two, "203.0.113.9", "10.0.0.5"},
		{[]string{"198.51.100.1/10.0.1.5", "203.0.113.9/10.0.0.5"}, two, "203.0.113.9", "10.0.0.5"},
		{[]string{"203.0.113.9"}, one, "203.0.113.9", "10.0.0.5"},
		{[]string{"203.0.113.9"}, two, "203.0.113.9", "203.0.113.9"}, // ambiguous: pion's path
		{[]string{"203.0.113.9/10.0.0.5"}, two, "10.0.1.5", "10.0.1.5"},
		{nil, one, "10.0.0.5", "10.0.0.5"},
	} {
		e := &Engine{cfg: Config{PublicIPs: c.public}, net: &observingNet{}}
		e.net.bound.Store(&c.bound)
		if got := e.behindNAT(netip.MustParseAddr(c.in)); got != netip.MustParseAddr(c.want) {
			t.Errorf("public-ip %v, sockets on %v: %s is behind %s, want %s", c.public, c.bound, c.in, got, c.want)
		}
	}
}
