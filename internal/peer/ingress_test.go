package peer

import (
	"bytes"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/srtp/v3"

	"github.com/podium-sfu/podium/internal/wire"
)

func ingressKeys() wire.Keys {
	return wire.Keys{Profile: srtp.ProtectionProfileAeadAes128Gcm,
		LocalKey: bytes.Repeat([]byte{1}, 16), LocalSalt: bytes.Repeat([]byte{2}, 12),
		RemoteKey: bytes.Repeat([]byte{3}, 16), RemoteSalt: bytes.Repeat([]byte{4}, 12)}
}

// peerOutbound protects what the peer sends to us with keys k (ours).
func peerOutbound(t testing.TB, k wire.Keys) *srtp.Context {
	t.Helper()
	ctx, err := srtp.CreateContext(k.RemoteKey, k.RemoteSalt, k.Profile)
	if err != nil {
		t.Fatal(err)
	}
	return ctx
}

type taken struct {
	got [][]byte
}

func (h *taken) handle(_ time.Time, b []byte, _ *wire.Batch) {
	h.got = append(h.got, append([]byte(nil), b...))
}

func TestIngressTakesSRTCPOfRegisteredPeersOnly(t *testing.T) {
	in := newIngress(newArrivals())
	sfu := observedLoopback(t, newArrivals(), in)
	peer, other := listenLoopback(t), listenLoopback(t)
	k := ingressKeys()
	open, err := k.RTCPOpener()
	if err != nil {
		t.Fatal(err)
	}
	h := &taken{}
	c := &inConn{open: open, handle: h.handle}
	in.set(peer.LocalAddr().(*net.UDPAddr).AddrPort(), c, c)

	out := peerOutbound(t, k)
	pli, _ := rtcp.Marshal([]rtcp.Packet{&rtcp.PictureLossIndication{SenderSSRC: 9, MediaSSRC: 7}})
	protected, err := out.EncryptRTCP(nil, pli, nil)
	if err != nil {
		t.Fatal(err)
	}
	forged := append([]byte(nil), protected...)
	forged[len(forged)-1] ^= 1
	to := sfu.LocalAddr().(*net.UDPAddr)
	send := func(c *net.UDPConn, b []byte) {
		if _, err := c.WriteToUDP(b, to); err != nil {
			t.Fatal(err)
		}
	}
	send(peer, protected)                                        // taken
	send(peer, forged)                                           // taken and rejected
	send(other, protected)                                       // another address: pion's
	send(peer, []byte{0x80, 0x60, 0, 1, 0, 0, 0, 1, 0, 0, 0, 7}) // RTP: pion's
	buf := make([]byte, 1500)
	_ = sfu.SetReadDeadline(time.Now().Add(5 * time.Second))
	for _, want := range []string{"the other peer's SRTCP", "the peer's RTP"} {
		k, from, err := sfu.ReadFromAddrPort(buf)
		if err != nil {
			t.Fatalf("reading %s: %v", want, err)
		}
		if from == peer.LocalAddr().(*net.UDPAddr).AddrPort() && isRTCP(buf[:k]) {
			t.Fatalf("pion got the registered peer's SRTCP (want %s)", want)
		}
	}
	if len(h.got) != 1 || !bytes.Equal(h.got[0], pli) {
		t.Fatalf("handler got %d packets, want the PLI once", len(h.got))
	}
	if c.taken.Load() != 1 || c.rejected.Load() != 1 {
		t.Fatalf("taken %d rejected %d, want 1 and 1", c.taken.Load(), c.rejected.Load())
	}
}

// observedLoopback is an SFU socket on loopback as the data plane wraps it:
// datagrams stamped into arrivals, those in takes (nil: none) handed to it.
// Closed when the test ends.
func observedLoopback(t testing.TB, arrivals *arrivals, in *ingress) *observingConn {
	t.Helper()
	n, err := newObservingNet(arrivals, nil, &guard{}, in)
	if err != nil {
		t.Fatal(err)
	}
	pc, err := n.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Close() })
	return pc.(*observingConn)
}

func listenLoopback(t testing.TB) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// FuzzIngressTake: any datagram from a registered peer is either left to pion
// untouched or taken; a taken one reached the handler only if it
// authenticated. Nothing panics.
func FuzzIngressTake(f *testing.F) {
	k := ingressKeys()
	out := peerOutbound(f, k)
	for _, p := range []rtcp.Packet{
		&rtcp.PictureLossIndication{SenderSSRC: 9, MediaSSRC: 7},
		&rtcp.TransportLayerNack{SenderSSRC: 9, MediaSSRC: 7, Nacks: []rtcp.NackPair{{PacketID: 5}}},
	} {
		b, _ := rtcp.Marshal([]rtcp.Packet{p})
		protected, err := out.EncryptRTCP(nil, b, nil)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(protected)
	}
	f.Add([]byte{0x80, 0xc8, 0, 0, 0, 0, 0, 1})
	f.Add([]byte{0x80, 0x60, 0, 1, 0, 0, 0, 1, 0, 0, 0, 7})
	addr := netip.MustParseAddrPort("127.0.0.1:5000")
	f.Add(func() []byte { // reports alone: dropped in feedbackOnly
		b, _ := rtcp.Marshal([]rtcp.Packet{&rtcp.ReceiverReport{SSRC: 9}})
		p, _ := out.EncryptRTCP(nil, b, nil)
		return p
	}())
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, feedbackOnly := range []bool{false, true} {
			in := newIngress(newArrivals())
			open, err := k.RTCPOpener()
			if err != nil {
				t.Fatal(err)
			}
			h := &taken{}
			c := &inConn{open: open, handle: h.handle, feedbackOnly: feedbackOnly}
			in.set(addr, c, c)
			orig := append([]byte(nil), b...)
			if in.take(orig, nil, addr.Addr(), addr.Port(), time.Now(), time.Now(), nil) == passToPion {
				if !bytes.Equal(b, orig) {
					t.Fatal("a datagram left to pion was modified")
				}
				continue
			}
			// feedbackOnly drops reports alone without handling them.
			if handled := uint64(len(h.got)); handled > c.taken.Load() || !feedbackOnly && handled != c.taken.Load() || c.taken.Load()+c.rejected.Load() != 1 {
				t.Fatalf("feedbackOnly %v: handled %d, taken %d, rejected %d", feedbackOnly, handled, c.taken.Load(), c.rejected.Load())
			}
		}
	})
}
