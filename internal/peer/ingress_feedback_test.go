package peer

import (
	"bytes"
	"net"
	"testing"
	"time"

	"github.com/pion/interceptor/pkg/twcc"
	"github.com/pion/rtcp"

	"github.com/podium-sfu/podium/internal/algo/bwe"
	"github.com/podium-sfu/podium/internal/forward"
)

// In the default mode a receiver's transport-wide feedback is taken at the
// socket and reaches its Link's estimator with no heap allocation of ours
// (pion's SRTCP session decoded it into fresh packets: two thirds of the
// server's allocations in meeting-8); reports alone are dropped there
// (nothing reads them); the rest of its RTCP (NACKs) goes to pion untouched.
func TestReceiverFeedbackTakenWithoutAllocating(t *testing.T) {
	in := newIngress(newArrivals())
	sfu := observedLoopback(t, newArrivals(), in)
	to := sfu.LocalAddr().(*net.UDPAddr).AddrPort()
	peer := listenLoopback(t)
	k := ingressKeys()
	open, err := k.RTCPOpener()
	if err != nil {
		t.Fatal(err)
	}
	link := forward.NewLink(bwe.DefaultConfig())
	c := &inConn{open: open, handle: link.HandleRTCP, feedbackOnly: true}
	in.set(peer.LocalAddr().(*net.UDPAddr).AddrPort(), c, c)

	// Prepared ahead: the receiver's work, not ours.
	out := peerOutbound(t, k)
	const runs = 600
	rec := twcc.NewRecorder(9)
	at := int64(1_000_000)
	fbs, rrs := make([][]byte, runs+1), make([][]byte, runs+1)
	for i := range fbs { // in the order sent: the SRTCP index rises
		for j := range 10 {
			at += 900
			rec.Record(7, uint16(i*10+j), at)
		}
		b, err := rtcp.Marshal(rec.BuildFeedbackPacket())
		if err != nil {
			t.Fatal(err)
		}
		if fbs[i], err = out.EncryptRTCP(nil, b, nil); err != nil {
			t.Fatal(err)
		}
		rr, _ := rtcp.Marshal([]rtcp.Packet{&rtcp.ReceiverReport{SSRC: 9, Reports: []rtcp.ReceptionReport{{SSRC: 7, LastSequenceNumber: uint32(i)}}}})
		if rrs[i], err = out.EncryptRTCP(nil, rr, nil); err != nil {
			t.Fatal(err)
		}
	}
	nack, _ := rtcp.Marshal([]rtcp.Packet{&rtcp.TransportLayerNack{SenderSSRC: 9, MediaSSRC: 7, Nacks: []rtcp.NackPair{{PacketID: 5}}}})
	marker, err := out.EncryptRTCP(nil, nack, nil) // pion's: ends each read
	if err != nil {
		t.Fatal(err)
	}

	buf := make([]byte, 1500)
	_ = sfu.SetReadDeadline(time.Now().Add(30 * time.Second))
	i := 0
	step := func() {
		_, _ = peer.WriteToUDPAddrPort(fbs[i], to)
		_, _ = peer.WriteToUDPAddrPort(rrs[i], to)
		_, _ = peer.WriteToUDPAddrPort(marker, to)
		i++
		k, _, err := sfu.ReadFromAddrPort(buf)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf[:k], marker) {
			t.Fatalf("pion got %d bytes, not the NACK as sent", k)
		}
	}
	for range 50 {
		step()
	}
	// None (pion's session allocated about a hundred times per feedback, and
	// pion's SRTCP AEAD open boxed its additional data: wire.RTCPOpener).
	allocs := testing.AllocsPerRun(runs-60, step)
	if allocs != 0 {
		t.Errorf("%v allocations per feedback, report and NACK, want 0", allocs)
	}
	if got := link.Stats().Feedbacks; got < runs-20 || c.taken.Load() != 2*got || c.rejected.Load() != 0 {
		t.Errorf("estimator took %d of %d feedbacks (taken %d, rejected %d)", got, i, c.taken.Load(), c.rejected.Load())
	}

	// Reports with a NACK in the same datagram go to pion as they came.
	rrNACK, _ := rtcp.Marshal([]rtcp.Packet{&rtcp.ReceiverReport{SSRC: 9}, &rtcp.TransportLayerNack{SenderSSRC: 9, MediaSSRC: 7, Nacks: []rtcp.NackPair{{PacketID: 6}}}})
	compound, err := out.EncryptRTCP(nil, rrNACK, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = peer.WriteToUDPAddrPort(compound, to)
	got, _, err := sfu.ReadFromAddrPort(buf)
	if err != nil || !bytes.Equal(buf[:got], compound) {
		t.Fatalf("pion got %d bytes (%v), not the report and NACK as sent", got, err)
	}
}
