package peer

import (
	"bytes"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/rtp"
	"github.com/pion/srtp/v3"

	"github.com/podium-sfu/podium/internal/wire"
)

const (
	takenSSRC = 0x1111
	otherSSRC = 0x2222
	twccExtID = 3
)

// srtpPacket is an RTP packet of ssrc with a transport-wide sequence number,
// protected as the publisher would.
func srtpPacket(t testing.TB, out *srtp.Context, ssrc uint32, seq, twcc uint16) []byte {
	t.Helper()
	p := rtp.Packet{Header: rtp.Header{Version: 2, PayloadType: 96, SequenceNumber: seq, Timestamp: uint32(seq) * 3000, SSRC: ssrc},
		Payload: bytes.Repeat([]byte{0x10, 0x5a}, 300)}
	if err := p.Header.SetExtension(twccExtID, []byte{byte(twcc >> 8), byte(twcc)}); err != nil {
		t.Fatal(err)
	}
	b, err := p.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	protected, err := out.EncryptRTP(nil, b, nil)
	if err != nil {
		t.Fatal(err)
	}
	return protected
}

// publishIngress is a publish connection registered at the peer's address
// with stream takenSSRC taken, and its transport-wide feedback recorder.
func publishIngress(t testing.TB, peer netip.AddrPort) (*ingress, *inConn, *feedbackRecorder, *taken) {
	t.Helper()
	a := newArrivals()
	in := newIngress(a)
	k := ingressKeys()
	o, err := k.RTPOpener()
	if err != nil {
		t.Fatal(err)
	}
	c := &inConn{rtp: wire.NewInbound()}
	c.rtp.SetOpener(o)
	h := &taken{}
	c.rtp.Take(takenSSRC, h.handle)
	in.set(peer, c, c)
	fb := newFeedbackRecorder(time.Now())
	a.add(takenSSRC, arrivalStream{extID: twccExtID, fb: fb})
	return in, c, fb, h
}

func TestIngressTakesTheTakenStreamsOfPublishers(t *testing.T) {
	peer, other := listenLoopback(t), listenLoopback(t)
	in, c, fb, h := publishIngress(t, peer.LocalAddr().(*net.UDPAddr).AddrPort())
	sfu := observedLoopback(t, in.arrivals, in)
	out := peerOutbound(t, ingressKeys())
	good := srtpPacket(t, out, takenSSRC, 100, 7)
	forged := append([]byte(nil), srtpPacket(t, out, takenSSRC, 101, 8)...)
	forged[len(forged)-1] ^= 1
	untaken := srtpPacket(t, out, otherSSRC, 5, 9)
	sr, _ := rtcp.Marshal([]rtcp.Packet{&rtcp.SenderReport{SSRC: takenSSRC}})
	srtcp, err := out.EncryptRTCP(nil, sr, nil)
	if err != nil {
		t.Fatal(err)
	}
	to := sfu.LocalAddr().(*net.UDPAddr)
	for _, s := range []struct {
		from *net.UDPConn
		b    []byte
	}{{peer, good}, {peer, forged}, {peer, untaken}, {peer, srtcp}, {other, good}} {
		if _, err := s.from.WriteToUDP(s.b, to); err != nil {
			t.Fatal(err)
		}
	}
	buf := make([]byte, 1500)
	_ = sfu.SetReadDeadline(time.Now().Add(5 * time.Second))
	for _, want := range [][]byte{untaken, srtcp, good} { // what pion must still get
		k, _, err := sfu.ReadFromAddrPort(buf)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf[:k], want) {
			t.Fatalf("pion got % x..., want % x...", buf[:min(k, 16)], want[:16])
		}
	}
	if len(h.got) != 1 {
		t.Fatalf("the handler got %d packets, want the taken stream's authentic one", len(h.got))
	}
	var hdr rtp.Header
	if _, err := hdr.Unmarshal(h.got[0]); err != nil || hdr.SSRC != takenSSRC || hdr.SequenceNumber != 100 {
		t.Fatalf("handler got %+v (%v), want the plain packet 100", hdr, err)
	}
	if c.rtp.Taken.Load() != 1 || c.rtp.Rejected.Load() != 1 {
		t.Fatalf("taken %d rejected %d, want 1 and 1", c.rtp.Taken.Load(), c.rtp.Rejected.Load())
	}
	// The authentic packet counts for the publisher's congestion feedback, the forged one not.
	pkts := feedbackPackets(t, fb, time.Now().Add(time.Second))
	if len(pkts) != 1 {
		t.Fatalf("feedback %v, want one report", pkts)
	}
	cc := pkts[0].(*rtcp.TransportLayerCC)
	if cc.BaseSequenceNumber != 7 || cc.PacketStatusCount != 1 {
		t.Fatalf("feedback on %d packets from %d, want packet 7 alone", cc.PacketStatusCount, cc.BaseSequenceNumber)
	}
}

// Forged packets of a taken stream never reach the feedback recorder, so they
// cannot hold back the records of authentic ones: a flood of forgeries with
// another taken stream's SSRC and a forgery of the stream itself from another
// address, then an authentic packet, and the feedback built right after
// reports it (stamped ahead of it, the forgeries would hold it for the
// recorder's 100 ms wait on unconfirmed stamps).
func TestForgedTakenPacketsDoNotHoldBackTheFeedback(t *testing.T) {
	const secondSSRC = 0x3333
	peer := listenLoopback(t)
	in, c, fb, h := publishIngress(t, peer.LocalAddr().(*net.UDPAddr).AddrPort())
	c.rtp.Take(secondSSRC, h.handle)
	in.arrivals.add(secondSSRC, arrivalStream{extID: twccExtID, fb: fb})
	sfu := observedLoopback(t, in.arrivals, in)
	out := peerOutbound(t, ingressKeys())
	to := sfu.LocalAddr().(*net.UDPAddr)
	for i := range 20 {
		forged := append([]byte(nil), srtpPacket(t, out, secondSSRC, uint16(200+i), uint16(50+i))...)
		forged[len(forged)-1] ^= 1
		if _, err := peer.WriteToUDP(forged, to); err != nil {
			t.Fatal(err)
		}
	}
	// And a copy of the authentic packet's stream from another address, which
	// goes to pion's path: its stamp waits for a reader, until the stream's
	// next authentic packet shows it forged.
	other := listenLoopback(t)
	if _, err := other.WriteToUDP(srtpPacket(t, out, takenSSRC, 99, 6), to); err != nil {
		t.Fatal(err)
	}
	for _, b := range [][]byte{srtpPacket(t, out, takenSSRC, 100, 7), srtpPacket(t, out, otherSSRC, 5, 9)} {
		if _, err := peer.WriteToUDP(b, to); err != nil {
			t.Fatal(err)
		}
	}
	buf := make([]byte, 1500)
	_ = sfu.SetReadDeadline(time.Now().Add(5 * time.Second))
	for range 2 { // the copy from the other address, then the untaken packet: all before it are handled
		if _, _, err := sfu.ReadFromAddrPort(buf); err != nil {
			t.Fatal(err)
		}
	}
	pkts := feedbackPackets(t, fb, time.Now())
	if c.rtp.Rejected.Load() != 20 || len(h.got) != 1 {
		t.Fatalf("rejected %d, handled %d: want the 20 forgeries refused and the authentic packet taken", c.rtp.Rejected.Load(), len(h.got))
	}
	if len(pkts) != 1 {
		t.Fatalf("feedback built at once: %v, want one report of packet 7", pkts)
	}
	cc := pkts[0].(*rtcp.TransportLayerCC)
	if cc.BaseSequenceNumber != 7 || cc.PacketStatusCount != 1 {
		t.Fatalf("feedback on %d packets from %d, want packet 7 alone", cc.PacketStatusCount, cc.BaseSequenceNumber)
	}
}

// TestTakenRTPPathDoesNotAllocate: the socket's reader taking a publisher's
// packet — read (with the kernel's arrival stamp), guard, ingress lookup,
// authenticate and decrypt in place, transport-wide feedback, handler —
// allocates nothing. (The handler's forwarding is forward's
// TestSocketToSocketPathDoesNotAllocate.)
func TestTakenRTPPathDoesNotAllocate(t *testing.T) {
	peer := listenLoopback(t)
	in, c, fb, _ := publishIngress(t, peer.LocalAddr().(*net.UDPAddr).AddrPort())
	handled := 0
	c.rtp.Take(takenSSRC, func(time.Time, []byte, *wire.Batch) { handled++ })
	sfu := observedLoopback(t, in.arrivals, in)
	to := sfu.LocalAddr().(*net.UDPAddr).AddrPort()
	out := peerOutbound(t, ingressKeys())
	// Prepared ahead: protecting is the publisher's work, not ours.
	const runs = 600
	pkts := make([][]byte, runs+1)
	for i := range pkts {
		pkts[i] = srtpPacket(t, out, takenSSRC, uint16(i), uint16(i))
	}
	marker := srtpPacket(t, out, otherSSRC, 1, 1) // pion's: ends each read
	buf := make([]byte, 1500)
	var fbBuf []byte
	i := 0
	step := func() {
		_, _ = peer.WriteToUDPAddrPort(pkts[i], to)
		_, _ = peer.WriteToUDPAddrPort(marker, to)
		i++
		if _, _, err := sfu.ReadFromAddrPort(buf); err != nil {
			t.Fatal(err)
		}
		if i%50 == 0 {
			fbBuf = fb.build(time.Now(), fbBuf[:0], 1) // as the feedback ticker does, so the recorder does not grow
		}
	}
	for range 50 {
		step()
	}
	allocs := testing.AllocsPerRun(runs-60, step)
	if allocs != 0 {
		t.Errorf("%v allocations per taken packet, want 0", allocs)
	}
	if handled < runs-20 {
		t.Errorf("the handler got %d of %d packets", handled, i)
	}
}

// FuzzIngressTakeRTP: any datagram from a registered publisher is either left
// to pion untouched or taken; taken, it reached the handler only if it was an
// authentic packet of a taken stream. Nothing panics.
func FuzzIngressTakeRTP(f *testing.F) {
	out := peerOutbound(f, ingressKeys())
	f.Add(srtpPacket(f, out, takenSSRC, 1, 1))
	f.Add(srtpPacket(f, out, otherSSRC, 1, 1))
	sr, _ := rtcp.Marshal([]rtcp.Packet{&rtcp.SenderReport{SSRC: takenSSRC}})
	srtcp, _ := out.EncryptRTCP(nil, sr, nil)
	f.Add(srtcp)
	f.Add([]byte{0x80, 0x60, 0, 1, 0, 0, 0, 1, 0, 0, 0x11, 0x11})
	f.Add([]byte{0x00, 0x01, 0x00, 0x00, 0x21, 0x12, 0xa4, 0x42}) // STUN
	f.Add([]byte{22, 254, 253, 0, 0})                             // DTLS
	addr := netip.MustParseAddrPort("127.0.0.1:5000")
	f.Fuzz(func(t *testing.T, b []byte) {
		in, c, _, h := publishIngress(t, addr)
		orig := append([]byte(nil), b...)
		if in.take(b, nil, addr.Addr(), addr.Port(), time.Now(), time.Now(), nil) == passToPion {
			if !bytes.Equal(b, orig) {
				t.Fatal("a datagram left to pion was modified")
			}
			return
		}
		if len(orig) < 12 || uint32(orig[8])<<24|uint32(orig[9])<<16|uint32(orig[10])<<8|uint32(orig[11]) != takenSSRC {
			t.Fatal("took a datagram that is not the taken stream's")
		}
		if uint64(len(h.got)) != c.rtp.Taken.Load() || c.rtp.Taken.Load()+c.rtp.Rejected.Load() != 1 {
			t.Fatalf("handled %d, taken %d, rejected %d", len(h.got), c.rtp.Taken.Load(), c.rtp.Rejected.Load())
		}
	})
}
