package server

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/podium-sfu/podium/internal/signal"
)

// p2pMode waits (longer than waitFor: the room holds its size P2PHold first)
// for the server's p2p message.
func (rc *rawConn) p2pMode(within time.Duration) signal.P2PMode {
	rc.t.Helper()
	timeout := time.After(within)
	for {
		select {
		case m, open := <-rc.msgs:
			if !open {
				rc.t.Fatalf("connection closed waiting for p2p: %v", rc.err)
			}
			if m.Type != signal.TypeP2P {
				continue
			}
			var p signal.P2PMode
			if err := json.Unmarshal(m.raw, &p); err != nil {
				rc.t.Fatal(err)
			}
			return p
		case <-timeout:
			rc.t.Fatalf("no p2p within %v", within)
		}
	}
}

func (rc *rawConn) p2pSend(typ string, msg signal.P2PSignal) {
	rc.t.Helper()
	frame, err := signal.Encode(typ, msg)
	if err != nil {
		rc.t.Fatal(err)
	}
	rc.send(frame)
}

// Hybrid P2P's relay over real signaling connections: two participants alone
// in a room are told to connect directly (the lower id initiates); an offer
// reaches the peer stamped with the sender's id; an offer to a participant of
// another room, an oversize SDP and a flood get their own non-fatal errors and
// reach nobody; a third participant ends P2P mode for both.
func TestP2PRelayOverSignaling(t *testing.T) {
	srv := startServer(t, Options{})
	a, b, other := dialRaw(t, srv), dialRaw(t, srv), dialRaw(t, srv)
	a.join("p2p", "Ann")
	b.join("p2p", "Bob")
	other.join("elsewhere", "Oz")
	ma, mb := a.p2pMode(10*time.Second), b.p2pMode(2*time.Second)
	if !ma.On || !mb.On || ma.Peer != b.id || mb.Peer != a.id || ma.Epoch != mb.Epoch || ma.Initiator == mb.Initiator {
		t.Fatalf("p2p: Ann told %+v, Bob told %+v", ma, mb)
	}
	if ma.Initiator != (a.id < b.id) {
		t.Errorf("initiator: Ann %v with ids %s, %s; want the lower id", ma.Initiator, a.id, b.id)
	}

	a.p2pSend(signal.TypeP2POffer, signal.P2PSignal{To: b.id, Epoch: ma.Epoch, SDP: "v=0 offer"})
	got := b.waitFor("p2p-offer", func(m serverMsg) bool { return m.Type == signal.TypeP2POffer })
	if want := fmt.Sprintf(`{"type":"p2p-offer","from":%q,"epoch":%d,"sdp":"v=0 offer"}`, a.id, ma.Epoch); string(got.raw) != want {
		t.Errorf("Bob got %s, want %s", got.raw, want)
	}

	a.p2pSend(signal.TypeP2POffer, signal.P2PSignal{To: other.id, Epoch: ma.Epoch, SDP: "v=0"})
	a.expectError(signal.CodeP2PNotPeer, false)
	a.send([]byte(`{"type":"p2p-offer","to":"` + b.id + `","epoch":1,"sdp":"` + strings.Repeat("x", signal.MaxP2PSDPBytes+1) + `"}`))
	a.expectError(signal.CodeP2PTooLarge, false)
	for range 70 {
		a.p2pSend(signal.TypeP2PCandidate, signal.P2PSignal{To: b.id, Epoch: ma.Epoch, Candidate: &signal.Candidate{Candidate: "candidate:1 1 udp 1 192.0.2.1 9 typ host"}})
	}
	a.expectError(signal.CodeP2PRateLimited, false)
	// The session goes on: a ping is answered (after the other refusals).
	a.send([]byte(`{"type":"ping","ts":7}`))
	for pong := false; !pong; {
		select {
		case m := <-a.msgs:
			if m.Type == signal.TypeError && m.Code != signal.CodeP2PRateLimited {
				t.Fatalf("error %s", m.raw)
			}
			pong = m.Type == signal.TypePong
		case <-time.After(5 * time.Second):
			t.Fatal("no pong after the flood")
		}
	}

	c := dialRaw(t, srv)
	c.join("p2p", "Cid")
	if off := a.p2pMode(5 * time.Second); off.On || off.Reason != "size" {
		t.Errorf("Ann after the third joined: %+v, want off for size", off)
	}
	if off := b.p2pMode(5 * time.Second); off.On {
		t.Errorf("Bob after the third joined: %+v, want off", off)
	}
	for len(other.msgs) > 0 {
		if m := <-other.msgs; strings.HasPrefix(m.Type, "p2p") {
			t.Fatalf("the other room's participant got %s", m.raw)
		}
	}
}
