package netem

import (
	"encoding/binary"
	"net"
	"net/netip"
	"slices"
	"testing"
	"time"
)

// echo is a UDP target on loopback that answers each datagram with itself,
// after noting when it arrived.
type echo struct {
	conn    *net.UDPConn
	arrived chan time.Time
}

func startEcho(t *testing.T) *echo {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	e := &echo{conn: c, arrived: make(chan time.Time, 1000)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		b := make([]byte, 2048)
		for {
			n, from, err := c.ReadFromUDPAddrPort(b)
			if err != nil {
				return
			}
			e.arrived <- time.Now()
			_, _ = c.WriteToUDPAddrPort(b[:n], from)
		}
	}()
	t.Cleanup(func() { _ = c.Close(); <-done })
	return e
}

func startRelay(t *testing.T, cfg RelayConfig) *Relay {
	t.Helper()
	r, err := StartRelay(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

func dial(t *testing.T, to *net.UDPAddr) *net.UDPConn {
	t.Helper()
	c, err := net.DialUDP("udp4", nil, to)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Through the relay on loopback, each datagram's one-way delay is the link's
// (40 ms up, 25 ms down, plus a millisecond or two of scheduling), and the
// echo's answers find their way back to the client the relay learned.
func TestRelayDelaysBothWays(t *testing.T) {
	const up, down = 40 * ms, 25 * ms
	e := startEcho(t)
	r := startRelay(t, RelayConfig{Listen: "127.0.0.1:0", Target: e.conn.LocalAddr().String(),
		Up: Config{Delay: up}, Down: Config{Delay: down}})
	c := dial(t, r.Addr())

	var oneWay, back []time.Duration
	buf := make([]byte, 100)
	for i := range 30 {
		binary.BigEndian.PutUint32(buf, uint32(i))
		sent := time.Now()
		if _, err := c.Write(buf); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(time.Second))
		n, err := c.Read(buf)
		if err != nil || n != 100 || binary.BigEndian.Uint32(buf) != uint32(i) {
			t.Fatalf("datagram %d: echo %d bytes, %v", i, n, err)
		}
		got := time.Now()
		arrived := <-e.arrived
		oneWay = append(oneWay, arrived.Sub(sent))
		back = append(back, got.Sub(arrived))
		time.Sleep(5 * ms)
	}
	for _, x := range []struct {
		name  string
		d     []time.Duration
		delay time.Duration
	}{{"client → target", oneWay, up}, {"target → client", back, down}} {
		slices.Sort(x.d)
		median := x.d[len(x.d)/2]
		t.Logf("%s: min %v, median %v, max %v (link delay %v)", x.name, x.d[0], median, x.d[len(x.d)-1], x.delay)
		if x.d[0] < x.delay || median > x.delay+5*ms {
			t.Errorf("%s: one-way delay min %v, median %v: want at least %v and a median within 5 ms of it", x.name, x.d[0], median, x.delay)
		}
	}
	if st := r.Stats(); st.Up.Delivered != 30 || st.Down.Delivered != 30 {
		t.Errorf("stats %+v: want 30 each way", st)
	}
}

// A rate limit holds the relayed rate: 200 datagrams of 1000 bytes offered at
// once to a 2 Mb/s link with a 2 s queue come out over (200·1028·8)/2e6 s.
func TestRelayRateLimit(t *testing.T) {
	e := startEcho(t)
	r := startRelay(t, RelayConfig{Listen: "127.0.0.1:0", Target: e.conn.LocalAddr().String(),
		Up: Config{Rate: 2_000_000, QueueTime: 2 * time.Second}})
	c := dial(t, r.Addr())
	buf := make([]byte, 1000)
	for range 200 {
		if _, err := c.Write(buf); err != nil {
			t.Fatal(err)
		}
	}
	var first, last time.Time
	for i := range 200 {
		select {
		case at := <-e.arrived:
			if i == 0 {
				first = at
			}
			last = at
		case <-time.After(2 * time.Second):
			t.Fatalf("%d of 200 arrived", i)
		}
	}
	want := time.Duration(199 * 1028 * 8 * int64(time.Second) / 2_000_000)
	if got := last.Sub(first); got < want*95/100 || got > want*110/100 {
		t.Errorf("200 datagrams spread over %v, want %v at 2 Mb/s", got, want)
	}
}

// Datagrams from outside Allow are refused and do not become the client.
func TestRelayAllow(t *testing.T) {
	e := startEcho(t)
	r := startRelay(t, RelayConfig{Listen: "127.0.0.1:0", Target: e.conn.LocalAddr().String(),
		Allow: netip.MustParsePrefix("10.0.0.0/8")})
	c := dial(t, r.Addr())
	if _, err := c.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for r.Stats().Refused == 0 && time.Now().Before(deadline) {
		time.Sleep(ms)
	}
	select {
	case <-e.arrived:
		t.Fatal("a datagram from outside Allow reached the target")
	case <-time.After(50 * ms):
	}
	if st := r.Stats(); st.Refused != 1 || st.Up.Delivered != 0 {
		t.Errorf("stats %+v: want 1 refused, none relayed", st)
	}
}

func TestStartRelayRejectsBadConfig(t *testing.T) {
	for _, cfg := range []RelayConfig{
		{Listen: "127.0.0.1:0", Target: "127.0.0.1:9", Down: Config{Loss: 2}},
		{Listen: "127.0.0.1:0", Target: "no-port"},
		{Listen: "bad::addr:x", Target: "127.0.0.1:9"},
	} {
		if r, err := StartRelay(cfg); err == nil {
			_ = r.Close()
			t.Errorf("%+v: started, want an error", cfg)
		}
	}
}

// Two clients get a socket each towards the target (which therefore sees two
// senders), and each gets its own answers back.
func TestRelayKeepsClientsApart(t *testing.T) {
	e := startEcho(t)
	r := startRelay(t, RelayConfig{Listen: "127.0.0.1:0", Target: e.conn.LocalAddr().String()})
	a, b := dial(t, r.Addr()), dial(t, r.Addr())
	buf := make([]byte, 16)
	for i := range 10 {
		for j, c := range []*net.UDPConn{a, b} {
			want := byte(2*i + j)
			if _, err := c.Write([]byte{want}); err != nil {
				t.Fatal(err)
			}
			_ = c.SetReadDeadline(time.Now().Add(time.Second))
			if n, err := c.Read(buf); err != nil || n != 1 || buf[0] != want {
				t.Fatalf("client %d got %v (%d bytes, %v), want its own echo %d", j, buf[:n], n, err, want)
			}
			<-e.arrived
		}
	}
	if st := r.Stats(); st.Clients != 2 || st.Up.Delivered != 20 || st.Down.Delivered != 20 {
		t.Errorf("stats %+v: want 2 clients and 20 datagrams each way", st)
	}
}
