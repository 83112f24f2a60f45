package relay

import (
	"bytes"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// natsConns starts an in-process NATS server and returns n connections to it.
func natsConns(t *testing.T, n int) []*nats.Conn {
	t.Helper()
	ns, err := natsserver.NewServer(&natsserver.Options{DontListen: true, NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	t.Cleanup(ns.Shutdown)
	if !ns.ReadyForConnections(5 * time.Second) {
		t.Fatal("nats not ready")
	}
	var out []*nats.Conn
	for range n {
		nc, err := nats.Connect("", nats.InProcessServer(ns))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		out = append(out, nc)
	}
	return out
}

type node struct {
	t   *Transport
	x   *Exchange
	got chan string
}

func startNode(t *testing.T, nc *nats.Conn, name string) *node {
	t.Helper()
	tr, err := Listen(TransportConfig{Listen: "127.0.0.1:0", Lead: 100 * time.Millisecond, Grace: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	n := &node{t: tr, got: make(chan string, 100)}
	tr.SetHandler(func(sender uint32, kind Kind, stream uint32, body []byte) {
		n.got <- string(body)
	})
	x, err := StartExchange(nc, name, tr, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	n.x = x
	t.Cleanup(func() { x.Close(); _ = tr.Close() })
	return n
}

// await sends with send every 20 ms until n receives want (keys may still
// be on their way at first), for at most 3 s.
func await(t *testing.T, n *node, want string, send func()) {
	t.Helper()
	deadline := time.After(3 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	send()
	for {
		select {
		case got := <-n.got:
			if got == want {
				return
			}
		case <-tick.C:
			send()
		case <-deadline:
			t.Fatalf("%q not received", want)
		}
	}
}

// TestTransportOverNATS: two nodes learn each other's keys over NATS and
// exchange datagrams; forged, replayed and unknown-key datagrams are dropped
// and counted; a rotation on demand is announced and used without loss.
func TestTransportOverNATS(t *testing.T) {
	ncs := natsConns(t, 2)
	a, b := startNode(t, ncs[0], "a"), startNode(t, ncs[1], "b")
	to := b.t.Addr()
	await(t, b, "hello", func() { _ = a.t.Send(time.Now(), to, KindMedia, 1, []byte("hello")) })
	if node, ok := b.t.Peers().Node(a.t.Keyring().Sender()); !ok || node != "a" {
		t.Fatalf("b knows a's tag as %q %v", node, ok)
	}
	st := b.t.Stats()
	dropped := func(d Drop) uint64 { return st.Dropped[d].Load() }
	waitDrop := func(d Drop, want uint64) {
		t.Helper()
		deadline := time.Now().Add(2 * time.Second)
		for dropped(d) < want {
			if time.Now().After(deadline) {
				t.Fatalf("%v: %d dropped, want %d", d, dropped(d), want)
			}
			time.Sleep(5 * time.Millisecond) // the datagram is in the kernel
		}
	}

	d, _ := a.t.Keyring().Seal(time.Now(), make([]byte, MaxDatagram), KindMedia, 1, []byte("once"))
	forged := bytes.Clone(d)
	forged[len(forged)-20] ^= 0x40 // in the sealed body
	_ = a.t.SendRaw(to, forged)
	waitDrop(Forged, 1)
	_ = a.t.SendRaw(to, d)
	if got := <-b.got; got != "once" {
		t.Fatalf("got %q", got)
	}
	_ = a.t.SendRaw(to, d)
	waitDrop(Replayed, 1)
	stranger := NewKeyring(time.Second)
	s, _ := stranger.Seal(time.Now(), make([]byte, MaxDatagram), KindMedia, 1, []byte("who?"))
	_ = a.t.SendRaw(to, s)
	waitDrop(UnknownKey, 1)

	// Rotation on demand: b learns the new key before a uses it.
	old := a.t.Keyring().current(time.Now()).ID
	a.x.Rotate()
	deadline := time.Now().Add(3 * time.Second)
	for a.t.Keyring().current(time.Now()).ID == old {
		if time.Now().After(deadline) {
			t.Fatal("key not rotated")
		}
		time.Sleep(10 * time.Millisecond)
	}
	before := dropped(UnknownKey)
	for i := range 20 {
		_ = a.t.Send(time.Now(), to, KindMedia, 1, []byte{byte(i)})
		if got := <-b.got; got != string([]byte{byte(i)}) {
			t.Fatalf("after rotation: got %q", got)
		}
	}
	if dropped(UnknownKey) != before || a.x.Rotations() != 1 {
		t.Fatalf("after rotation: %d unknown-key drops, %d rotations", dropped(UnknownKey)-before, a.x.Rotations())
	}
	// The other way round too.
	await(t, a, "back", func() { _ = b.t.Send(time.Now(), a.t.Addr(), KindFeedback, 1, []byte("back")) })
}

// TestSendAllocs: sending a datagram allocates nothing in steady state.
func TestSendAllocs(t *testing.T) {
	tr, err := Listen(TransportConfig{Listen: "127.0.0.1:0", Lead: time.Second, Grace: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	body := make([]byte, 1200)
	to := tr.Addr()
	allocs := testing.AllocsPerRun(200, func() { _ = tr.Send(time.Now(), to, KindMedia, 1, body) })
	if allocs != 0 {
		t.Fatalf("%.1f allocations per send", allocs)
	}
}

// A handler taken away (SetHandler(nil), as a closing cascade does) drops
// what still arrives: the reader neither panics nor stops, and a handler set
// again receives.
func TestTransportWithoutHandlerDropsWhatArrives(t *testing.T) {
	ncs := natsConns(t, 2)
	a, b := startNode(t, ncs[0], "a"), startNode(t, ncs[1], "b")
	to := b.t.Addr()
	await(t, b, "before", func() { _ = a.t.Send(time.Now(), to, KindMedia, 1, []byte("before")) })
	b.t.SetHandler(nil)
	received := b.t.Stats().Received.Load()
	deadline := time.Now().Add(3 * time.Second)
	for b.t.Stats().Received.Load() < received+3 {
		if time.Now().After(deadline) {
			t.Fatal("datagrams sent with no handler were not received")
		}
		_ = a.t.Send(time.Now(), to, KindMedia, 1, []byte("while none"))
		time.Sleep(10 * time.Millisecond)
	}
	b.t.SetHandler(func(_ uint32, _ Kind, _ uint32, body []byte) { b.got <- string(body) })
	await(t, b, "after", func() { _ = a.t.Send(time.Now(), to, KindMedia, 1, []byte("after")) })
}
