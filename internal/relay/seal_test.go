package relay

import (
	"bytes"
	"testing"
	"time"
)

func pair(t *testing.T, now time.Time) (*Keyring, *Peers) {
	t.Helper()
	ring := NewKeyring(2 * time.Second)
	peers := NewPeers(30 * time.Second)
	peers.Learn(now, "a", ring.Sender(), ring.Keys(now))
	return ring, peers
}

func seal(t *testing.T, ring *Keyring, now time.Time, stream uint32, body string) []byte {
	t.Helper()
	d, err := ring.Seal(now, make([]byte, MaxDatagram), KindMedia, stream, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestSealOpen(t *testing.T) {
	now := time.Unix(1000, 0)
	ring, peers := pair(t, now)
	d := seal(t, ring, now, 42, "an RTP packet")
	if len(d) != Overhead+len("an RTP packet") {
		t.Fatalf("datagram of %d bytes", len(d))
	}
	var h Header
	stream, body, drop := peers.Open(now, bytes.Clone(d), &h)
	if drop != Accepted || stream != 42 || string(body) != "an RTP packet" || h.Sender != ring.Sender() || h.Counter != 1 {
		t.Fatalf("open: %v stream %d body %q header %+v", drop, stream, body, h)
	}
	// The same datagram again is a replay.
	if _, _, drop := peers.Open(now, bytes.Clone(d), &h); drop != Replayed {
		t.Fatalf("replay: %v", drop)
	}
	// Every single-bit change anywhere is refused.
	fresh := seal(t, ring, now, 42, "another")
	for i := range fresh {
		for bit := range 8 {
			b := bytes.Clone(fresh)
			b[i] ^= 1 << bit
			if _, _, drop := peers.Open(now, b, &h); drop == Accepted {
				t.Fatalf("byte %d bit %d flipped: accepted", i, bit)
			}
		}
	}
	if _, _, drop := peers.Open(now, bytes.Clone(fresh), &h); drop != Accepted {
		t.Fatalf("the unchanged datagram after its forgeries: %v", drop)
	}
	// Sealed by a node we have no key of.
	other := NewKeyring(time.Second)
	if _, _, drop := peers.Open(now, seal(t, other, now, 42, "x"), &h); drop != UnknownKey {
		t.Fatalf("unknown sender: %v", drop)
	}
	// Our sender's key id, a key we never learnt: a forgery under a guessed key.
	forger := ringWith(ring.Sender(), newSendKey(ring.Keys(now)[0].ID))
	forger.active.Load().counter.Store(1000) // past the window: judged by its tag
	if _, _, drop := peers.Open(now, seal(t, forger, now, 42, "x"), &h); drop != Forged {
		t.Fatalf("forged: %v", drop)
	}
}

func TestRotation(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ring, peers := pair(t, t0)
	first := ring.Keys(t0)[0].ID
	before := seal(t, ring, t0, 1, "old key")
	ring.Rotate(t0)
	keys := ring.Keys(t0)
	if len(keys) != 2 || keys[0].ID != first || keys[1].ID != first+1 {
		t.Fatalf("keys after rotate: %+v", keys)
	}
	// Announced, not used before the lead time.
	var h Header
	if d := seal(t, ring, t0.Add(time.Second), 1, "x"); Parse(d, &h) != nil || h.KeyID != first {
		t.Fatalf("sealed under %d during the lead", h.KeyID)
	}
	t1 := t0.Add(3 * time.Second)
	peers.Learn(t1, "a", ring.Sender(), ring.Keys(t1))
	after := seal(t, ring, t1, 1, "new key")
	if Parse(after, &h) != nil || h.KeyID != first+1 {
		t.Fatalf("sealed under %d after the lead", h.KeyID)
	}
	if _, _, drop := peers.Open(t1, after, &h); drop != Accepted {
		t.Fatalf("new key: %v", drop)
	}
	// The old key still opens within the grace period...
	if _, _, drop := peers.Open(t1.Add(10*time.Second), bytes.Clone(before), &h); drop != Accepted {
		t.Fatalf("old key within grace: %v", drop)
	}
	// ...and not after it.
	late := seal(t, ringWith(ring.Sender(), ring.prev), t1, 1, "x")
	if _, _, drop := peers.Open(t1.Add(31*time.Second), late, &h); drop != UnknownKey {
		t.Fatalf("old key after grace: %v", drop)
	}
	// A later Learn forgets it altogether.
	peers.Learn(t1.Add(40*time.Second), "a", ring.Sender(), ring.Keys(t1))
	if n := len(*peers.keys.Load()); n != 1 {
		t.Fatalf("%d keys kept after the grace period", n)
	}
}

// TestRestartedPeer: a node that restarts has a new tag and keys; the old
// tag's keys retire.
func TestRestartedPeer(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ring, peers := pair(t, t0)
	old := seal(t, ring, t0, 1, "x")
	again := NewKeyring(time.Second)
	peers.Learn(t0, "a", again.Sender(), again.Keys(t0))
	var h Header
	if _, _, drop := peers.Open(t0.Add(31*time.Second), old, &h); drop != UnknownKey {
		t.Fatalf("restarted node's old key after grace: %v", drop)
	}
	if n, ok := peers.Node(again.Sender()); !ok || n != "a" {
		t.Fatalf("node of the new tag: %q %v", n, ok)
	}
}

// TestSealOpenAllocs: sealing and opening a datagram allocate nothing.
func TestSealOpenAllocs(t *testing.T) {
	now := time.Unix(1000, 0)
	ring, peers := pair(t, now)
	dst := make([]byte, MaxDatagram)
	in := make([]byte, MaxDatagram)
	body := make([]byte, 1200)
	var h Header
	allocs := testing.AllocsPerRun(1000, func() {
		d, err := ring.Seal(now, dst, KindMedia, 9, body)
		if err != nil {
			t.Fatal(err)
		}
		n := copy(in, d)
		if _, _, drop := peers.Open(now, in[:n], &h); drop != Accepted {
			t.Fatal(drop)
		}
	})
	if allocs != 0 {
		t.Fatalf("%.1f allocations per datagram", allocs)
	}
}

func BenchmarkSealOpen(b *testing.B) {
	now := time.Unix(1000, 0)
	ring := NewKeyring(time.Second)
	peers := NewPeers(time.Minute)
	peers.Learn(now, "a", ring.Sender(), ring.Keys(now))
	dst, in, body := make([]byte, MaxDatagram), make([]byte, MaxDatagram), make([]byte, 1200)
	var h Header
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		d, _ := ring.Seal(now, dst, KindMedia, 9, body)
		n := copy(in, d)
		peers.Open(now, in[:n], &h)
	}
}

// ringWith is a ring sealing under k as sender.
func ringWith(sender uint32, k *sendKey) *Keyring {
	r := &Keyring{sender: sender}
	r.active.Store(k)
	return r
}
