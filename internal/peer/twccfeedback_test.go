package peer

import (
	"bytes"
	"net"
	"testing"
	"time"

	"github.com/pion/interceptor"
	"github.com/pion/rtcp"
	"github.com/pion/srtp/v3"

	"github.com/podium-sfu/podium/internal/gridclock"
	"github.com/podium-sfu/podium/internal/wire"
)

// rtcpCatcher is pion's RTCP writer below the feedback interceptor.
type rtcpCatcher struct{ got [][]byte }

func (c *rtcpCatcher) Write(pkts []rtcp.Packet, _ interceptor.Attributes) (int, error) {
	b, err := rtcp.Marshal(pkts)
	c.got = append(c.got, b)
	return len(b), err
}

// routedFeedback is a publish connection's feedback interceptor whose route
// (keys and a UDP pair from our socket sfu to peer) was handed over as
// Engine.Publish does.
func routedFeedback(t testing.TB, sfu, peer *net.UDPConn, k wire.Keys) *twccFeedback {
	t.Helper()
	f := &twccFeedbackFactory{arrivals: newArrivals()}
	i, err := f.NewInterceptor("PeerConnection-1")
	if err != nil {
		t.Fatal(err)
	}
	s, err := wire.NewSocket(sfu)
	if err != nil {
		t.Fatal(err)
	}
	r := &wire.Route{}
	r.SetKeys(k)
	r.SetDest(wire.NewDest(s, peer.LocalAddr().(*net.UDPAddr).AddrPort()))
	f.route("PeerConnection-1", r)
	return i.(*twccFeedback)
}

// readFeedback reads one SRTCP datagram at the peer and opens it with the
// peer's keys.
func readFeedback(t testing.TB, peer *net.UDPConn, in *srtp.Context) *rtcp.TransportLayerCC {
	t.Helper()
	buf := make([]byte, 1500)
	_ = peer.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := peer.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := in.DecryptRTCP(nil, buf[:n], nil)
	if err != nil {
		t.Fatalf("the peer cannot open our feedback: %v", err)
	}
	pkts, err := rtcp.Unmarshal(plain)
	if err != nil || len(pkts) != 1 {
		t.Fatalf("feedback %v (%v), want one packet", pkts, err)
	}
	cc, ok := pkts[0].(*rtcp.TransportLayerCC)
	if !ok {
		t.Fatalf("got %T", pkts[0])
	}
	return cc
}

// peerInbound opens what we send to the peer with keys k (ours).
func peerInbound(t testing.TB, k wire.Keys) *srtp.Context {
	t.Helper()
	ctx, err := srtp.CreateContext(k.LocalKey, k.LocalSalt, k.Profile)
	if err != nil {
		t.Fatal(err)
	}
	return ctx
}

// TestFeedbackSealedOnTheRoute: a publish connection with a route seals its
// feedback itself and sends it to the publisher's address, under an SSRC of
// its own, leaving pion's writer alone; without one it goes through pion's.
func TestFeedbackSealedOnTheRoute(t *testing.T) {
	sfu, peer := listenLoopback(t), listenLoopback(t)
	fb := routedFeedback(t, sfu, peer, ingressKeys())
	now := time.Now()
	for seq := uint16(10); seq < 20; seq++ {
		if seq != 13 {
			fb.fb.authenticated(0xA, seq, now.Add(time.Duration(seq)*time.Millisecond))
		}
	}
	w := &rtcpCatcher{}
	fb.send(now.Add(time.Second), w)
	if len(w.got) != 0 {
		t.Fatalf("pion's writer got %d feedbacks, want none", len(w.got))
	}
	cc := readFeedback(t, peer, peerInbound(t, ingressKeys()))
	if cc.SenderSSRC != fb.ownSSRC || cc.MediaSSRC != 0xA || cc.BaseSequenceNumber != 10 || cc.PacketStatusCount != 10 || len(cc.RecvDeltas) != 9 {
		t.Fatalf("feedback from %x on %x: %d packets from %d, %d received; want ours on 10..19 but 13",
			cc.SenderSSRC, cc.MediaSSRC, cc.PacketStatusCount, cc.BaseSequenceNumber, len(cc.RecvDeltas))
	}

	// Without a route (ICE-TCP, WHIP): pion's writer, pion's SSRC.
	f := &twccFeedbackFactory{arrivals: newArrivals()}
	i, _ := f.NewInterceptor("PeerConnection-2")
	unrouted := i.(*twccFeedback)
	now = time.Now() // after the recorder's zero
	unrouted.fb.authenticated(0xB, 5, now)
	unrouted.send(now.Add(time.Second), w)
	if len(w.got) != 1 {
		t.Fatalf("pion's writer got %d feedbacks, want 1", len(w.got))
	}
	pkts, err := rtcp.Unmarshal(w.got[0])
	if err != nil {
		t.Fatal(err)
	}
	if cc := pkts[0].(*rtcp.TransportLayerCC); cc.SenderSSRC != unrouted.pionSSRC || cc.SenderSSRC == unrouted.ownSSRC || cc.BaseSequenceNumber != 5 {
		t.Fatalf("pion got %+v, want packet 5 from %x", cc, unrouted.pionSSRC)
	}
	if err := unrouted.Close(); err != nil {
		t.Fatal(err)
	}
	if len(f.byPC) != 0 {
		t.Errorf("the factory still holds %d interceptors after they closed", len(f.byPC))
	}
}

// TestFeedbackSentWithoutAllocating: 50 ms of a publisher's packets recorded,
// their feedback built, sealed and sent on the route, allocate nothing, with
// AES-GCM too (wire.RTCPSealer: pion's sealing boxed its additional data).
func TestFeedbackSentWithoutAllocating(t *testing.T) {
	for _, profile := range []srtp.ProtectionProfile{srtp.ProtectionProfileAes128CmHmacSha1_80, srtp.ProtectionProfileAeadAes128Gcm} {
		t.Run(profile.String(), func(t *testing.T) {
			sfu, peer := listenLoopback(t), listenLoopback(t)
			k := ingressKeys()
			k.Profile = profile
			if profile == srtp.ProtectionProfileAes128CmHmacSha1_80 {
				k.LocalSalt, k.RemoteSalt = bytes.Repeat([]byte{2}, 14), bytes.Repeat([]byte{4}, 14)
			}
			fb := routedFeedback(t, sfu, peer, k)
			in := peerInbound(t, k)
			w := &rtcpCatcher{}
			now := time.Now()
			seq := uint16(0)
			round := func() {
				for range 25 {
					seq++
					now = now.Add(2 * time.Millisecond)
					fb.fb.stamp(0xA, seq, now)
					fb.fb.authenticated(0xA, seq, now.Add(time.Millisecond))
				}
				fb.send(now.Add(time.Millisecond), w)
			}
			round()
			if cc := readFeedback(t, peer, in); cc.PacketStatusCount != 25 {
				t.Fatalf("feedback on %d packets, want 25", cc.PacketStatusCount)
			}
			go func() { // the publisher reads the rest
				buf := make([]byte, 1500)
				for {
					if _, err := peer.Read(buf); err != nil {
						return
					}
				}
			}()
			for range 50 {
				round()
			}
			if allocs := testing.AllocsPerRun(100, round); allocs != 0 {
				t.Errorf("%v allocations per feedback, want 0", allocs)
			}
			if len(w.got) != 0 {
				t.Errorf("pion's writer got %d feedbacks", len(w.got))
			}
		})
	}
}

// blockingWriter is pion's RTCP writer on a connection whose transport is
// stuck (ICE-TCP with a full send buffer): Write waits until release closes.
type blockingWriter struct {
	calls   chan struct{}
	release chan struct{}
}

func (w *blockingWriter) Write([]rtcp.Packet, interceptor.Attributes) (int, error) {
	w.calls <- struct{}{}
	<-w.release
	return 0, nil
}

// TestFeedbackClockServesEveryConnectionAndNoneStallsIt: one clock sends the
// feedback of every publish connection; one whose pion writer blocks holds
// up only itself; after Close a connection gets nothing more and the clock
// steps it no more.
func TestFeedbackClockServesEveryConnectionAndNoneStallsIt(t *testing.T) {
	sfu, peer := listenLoopback(t), listenLoopback(t)
	f := &twccFeedbackFactory{arrivals: newArrivals()}
	ia, _ := f.NewInterceptor("PeerConnection-A")
	ib, _ := f.NewInterceptor("PeerConnection-B")
	a, b := ia.(*twccFeedback), ib.(*twccFeedback)
	s, err := wire.NewSocket(sfu)
	if err != nil {
		t.Fatal(err)
	}
	r := &wire.Route{}
	r.SetKeys(ingressKeys())
	r.SetDest(wire.NewDest(s, peer.LocalAddr().(*net.UDPAddr).AddrPort()))
	f.route("PeerConnection-A", r)

	stuck := &blockingWriter{calls: make(chan struct{}, 10), release: make(chan struct{})}
	b.fb.authenticated(0xB, 1, time.Now())
	b.BindRTCPWriter(stuck)
	a.BindRTCPWriter(&rtcpCatcher{})
	select {
	case <-stuck.calls: // B's send is now blocked in pion's writer
	case <-time.After(5 * time.Second):
		t.Fatal("B's feedback never reached pion's writer")
	}
	in := peerInbound(t, ingressKeys())
	for seq := uint16(1); seq <= 3; seq++ {
		a.fb.authenticated(0xA, seq, time.Now())
		if cc := readFeedback(t, peer, in); cc.MediaSSRC != 0xA {
			t.Fatalf("feedback on %x, want A's stream", cc.MediaSSRC)
		}
	}
	close(stuck.release)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	a.fb.authenticated(0xA, 9, time.Now())
	_ = peer.SetReadDeadline(time.Now().Add(3 * twccFeedbackInterval))
	if n, err := peer.Read(make([]byte, 1500)); err == nil {
		t.Fatalf("A got a %d-byte feedback after it closed", n)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if gridclock.Shared.Has(a) || gridclock.Shared.Has(b) {
		t.Fatal("the clock still steps a connection that closed")
	}
}
