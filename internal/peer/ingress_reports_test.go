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

// reportsIngress is publishIngress with stream takenSSRC taken with its
// sender reports (to sr) and the connection's SRTCP opener for keys k.
func reportsIngress(t testing.TB, peer netip.AddrPort, k wire.Keys) (*ingress, *inConn, *taken) {
	t.Helper()
	in, c, _, h := publishIngress(t, peer)
	open, err := k.RTCPOpener()
	if err != nil {
		t.Fatal(err)
	}
	c.open = open
	sr := &taken{}
	c.rtp.TakeWithReports(takenSSRC, h.handle, sr.handle)
	return in, c, sr
}

// publisherRTCP is compound RTCP as a publisher sends it, protected.
func publisherRTCP(t testing.TB, out *srtp.Context, pkts ...rtcp.Packet) (plain, protected []byte) {
	t.Helper()
	plain, err := rtcp.Marshal(pkts)
	if err != nil {
		t.Fatal(err)
	}
	protected, err = out.EncryptRTCP(nil, plain, nil)
	if err != nil {
		t.Fatal(err)
	}
	return plain, protected
}

func sdes(ssrc uint32) *rtcp.SourceDescription {
	return &rtcp.SourceDescription{Chunks: []rtcp.SourceDescriptionChunk{{Source: ssrc,
		Items: []rtcp.SourceDescriptionItem{{Type: rtcp.SDESCNAME, Text: "cname"}}}}}
}

// A publisher's SRTCP led by the sender report of a stream taken with its
// reports is taken at the socket and handed to that stream, authenticated
// and decrypted; a forged one is dropped; what leads with another stream's
// report or anything else, or comes from another address, reaches pion as
// it came. With AES-GCM (opened by wire's opener) and AES-CM (a pion
// context of its own).
func TestIngressTakesTheSenderReportsOfTakenStreams(t *testing.T) {
	gcm, cm := ingressKeys(), ingressKeys()
	cm.Profile, cm.LocalSalt, cm.RemoteSalt = srtp.ProtectionProfileAes128CmHmacSha1_80, bytes.Repeat([]byte{2}, 14), bytes.Repeat([]byte{4}, 14)
	for _, k := range []wire.Keys{gcm, cm} {
		t.Run(k.Profile.String(), func(t *testing.T) {
			peer, other := listenLoopback(t), listenLoopback(t)
			in, c, sr := reportsIngress(t, peer.LocalAddr().(*net.UDPAddr).AddrPort(), k)
			sfu := observedLoopback(t, in.arrivals, in)
			out := peerOutbound(t, k)
			plain, report := publisherRTCP(t, out, &rtcp.SenderReport{SSRC: takenSSRC, NTPTime: 0x1122334455667788, RTPTime: 99}, sdes(takenSSRC))
			_, forged := publisherRTCP(t, out, &rtcp.SenderReport{SSRC: takenSSRC, NTPTime: 1}, sdes(takenSSRC))
			forged[len(forged)-1] ^= 1
			_, untaken := publisherRTCP(t, out, &rtcp.SenderReport{SSRC: otherSSRC}, sdes(otherSSRC))
			_, rr := publisherRTCP(t, out, &rtcp.ReceiverReport{SSRC: takenSSRC}, sdes(takenSSRC))
			_, bye := publisherRTCP(t, out, &rtcp.Goodbye{Sources: []uint32{takenSSRC}})
			_, again := publisherRTCP(t, out, &rtcp.SenderReport{SSRC: takenSSRC, NTPTime: 2}, sdes(takenSSRC))
			to := sfu.LocalAddr().(*net.UDPAddr)
			for _, s := range []struct {
				from *net.UDPConn
				b    []byte
			}{{peer, report}, {peer, forged}, {peer, untaken}, {peer, rr}, {peer, bye}, {other, again}} {
				if _, err := s.from.WriteToUDP(s.b, to); err != nil {
					t.Fatal(err)
				}
			}
			buf := make([]byte, 1500)
			_ = sfu.SetReadDeadline(time.Now().Add(5 * time.Second))
			for _, want := range [][]byte{untaken, rr, bye, again} { // what pion must still get
				n, _, err := sfu.ReadFromAddrPort(buf)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(buf[:n], want) {
					t.Fatalf("pion got % x..., want % x...", buf[:min(n, 16)], want[:16])
				}
			}
			if len(sr.got) != 1 || !bytes.Equal(sr.got[0], plain) {
				t.Fatalf("the stream's reports: %x, want the authentic one, plain: %x", sr.got, plain)
			}
			if c.taken.Load() != 1 || c.rejected.Load() != 1 || c.rtp.Taken.Load() != 0 {
				t.Fatalf("taken %d rejected %d (RTP taken %d), want 1, 1, 0", c.taken.Load(), c.rejected.Load(), c.rtp.Taken.Load())
			}
			// Released, the stream's reports are pion's again.
			c.rtp.Release(takenSSRC)
			_, later := publisherRTCP(t, out, &rtcp.SenderReport{SSRC: takenSSRC, NTPTime: 3}, sdes(takenSSRC))
			if _, err := peer.WriteToUDP(later, to); err != nil {
				t.Fatal(err)
			}
			if n, _, err := sfu.ReadFromAddrPort(buf); err != nil || !bytes.Equal(buf[:n], later) {
				t.Fatalf("after release pion got % x... (%v), want the report", buf[:min(n, 16)], err)
			}
		})
	}
}

// TestSenderReportTakenWithoutAllocating: the socket's reader taking a
// publisher's sender report — read, guard, ingress lookup, authenticate and
// decrypt in place (AES-GCM), handler — allocates nothing. (Pion's SRTCP
// session decrypted, decoded and queued each: 14 % of meeting-8's
// allocations. The handler's relaying is forward's
// TestSenderReportTakenAtTheSocket.)
func TestSenderReportTakenWithoutAllocating(t *testing.T) {
	peer := listenLoopback(t)
	k := ingressKeys()
	in, c, _ := reportsIngress(t, peer.LocalAddr().(*net.UDPAddr).AddrPort(), k)
	handled := 0
	c.rtp.TakeWithReports(takenSSRC, func(time.Time, []byte, *wire.Batch) {}, func(time.Time, []byte, *wire.Batch) { handled++ })
	sfu := observedLoopback(t, in.arrivals, in)
	to := sfu.LocalAddr().(*net.UDPAddr).AddrPort()
	out := peerOutbound(t, k)
	const runs = 300
	reports := make([][]byte, runs+1) // protected ahead: the publisher's work
	for i := range reports {
		_, reports[i] = publisherRTCP(t, out, &rtcp.SenderReport{SSRC: takenSSRC, NTPTime: uint64(i)}, sdes(takenSSRC))
	}
	_, marker := publisherRTCP(t, out, &rtcp.SenderReport{SSRC: otherSSRC}) // pion's: ends each read
	buf := make([]byte, 1500)
	i := 0
	step := func() {
		_, _ = peer.WriteToUDPAddrPort(reports[i], to)
		_, _ = peer.WriteToUDPAddrPort(marker, to)
		i++
		if _, _, err := sfu.ReadFromAddrPort(buf); err != nil {
			t.Fatal(err)
		}
	}
	for range 20 {
		step()
	}
	allocs := testing.AllocsPerRun(runs-30, step)
	if allocs != 0 {
		t.Errorf("%v allocations per taken sender report, want 0", allocs)
	}
	if handled < runs-30 {
		t.Errorf("the stream got %d of %d reports", handled, i)
	}
}

// FuzzIngressTakeSenderReport: any datagram from a publisher whose stream is
// taken with its reports is either left to pion untouched or taken; taken,
// it led with that stream's sender report in the clear, and reached the
// handler only if it was authentic. Nothing panics.
func FuzzIngressTakeSenderReport(f *testing.F) {
	k := ingressKeys()
	out := peerOutbound(f, k)
	for _, pkts := range [][]rtcp.Packet{
		{&rtcp.SenderReport{SSRC: takenSSRC, NTPTime: 5}, sdes(takenSSRC)},
		{&rtcp.SenderReport{SSRC: takenSSRC, Reports: []rtcp.ReceptionReport{{SSRC: 9}}}},
		{&rtcp.SenderReport{SSRC: otherSSRC}},
		{&rtcp.ReceiverReport{SSRC: takenSSRC}},
		{&rtcp.Goodbye{Sources: []uint32{takenSSRC}}},
	} {
		_, b := publisherRTCP(f, out, pkts...)
		f.Add(b)
	}
	f.Add(srtpPacket(f, out, takenSSRC, 1, 1))
	f.Add([]byte{0x80, 200, 0, 6, 0, 0, 0x11, 0x11}) // a report's clear header alone
	addr := netip.MustParseAddrPort("127.0.0.1:5000")
	f.Fuzz(func(t *testing.T, b []byte) {
		in, c, sr := reportsIngress(t, addr, k)
		orig := append([]byte(nil), b...)
		if in.take(b, nil, addr.Addr(), addr.Port(), time.Now(), time.Now(), nil) == passToPion {
			if !bytes.Equal(b, orig) {
				t.Fatal("a datagram left to pion was modified")
			}
			return
		}
		if !isRTCP(orig) {
			return // RTP: FuzzIngressTakeRTP's
		}
		if orig[1] != 200 || uint32(orig[4])<<24|uint32(orig[5])<<16|uint32(orig[6])<<8|uint32(orig[7]) != takenSSRC {
			t.Fatal("took SRTCP not led by the taken stream's sender report")
		}
		if uint64(len(sr.got)) != c.taken.Load() || c.taken.Load()+c.rejected.Load() != 1 {
			t.Fatalf("handled %d, taken %d, rejected %d", len(sr.got), c.taken.Load(), c.rejected.Load())
		}
	})
}
