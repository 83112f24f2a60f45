package session

import (
	"bytes"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/rtp"
	"github.com/pion/srtp/v3"
	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/forward"
	"github.com/podium-sfu/podium/internal/wire"
)

// lossyUp is a video stream that received seqs (the others are missing).
func lossyUp(ssrc uint32, seqs ...uint16) *forward.UpTrack {
	up := forward.NewUpTrack(forward.UpTrackParams{Kind: webrtc.RTPCodecTypeVideo, SSRC: ssrc,
		Codec: webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeVP8, ClockRate: 90000,
			RTCPFeedback: []webrtc.RTCPFeedback{{Type: "nack"}, {Type: "nack", Parameter: "pli"}}},
		Read: func([]byte) (int, error) { select {} }})
	out := wire.NewBatch(4)
	for _, seq := range seqs {
		b, _ := (&rtp.Packet{Header: rtp.Header{Version: 2, PayloadType: 96, SequenceNumber: seq, SSRC: ssrc}}).Marshal()
		up.Receive(time.Now(), b, out)
	}
	return up
}

// The NACKs written in place are pion's, byte for byte, for any sequence
// numbers (pairs, gaps over 16, wraps, repeats).
func TestNACKWrittenAsPion(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		seqs := make([]uint16, 1+rng.IntN(12))
		seqs[0] = uint16(rng.Uint32())
		for i := 1; i < len(seqs); i++ {
			seqs[i] = seqs[i-1] + uint16(rng.IntN(24))
		}
		want, err := rtcp.Marshal([]rtcp.Packet{&rtcp.TransportLayerNack{SenderSSRC: 7, MediaSSRC: 9,
			Nacks: rtcp.NackPairsFromSequenceNumbers(seqs)}})
		if err != nil {
			t.Fatal(err)
		}
		if got := appendNACK([]byte{1, 2}, 7, 9, seqs)[2:]; !bytes.Equal(got, want) {
			t.Fatalf("NACK of %v written as\n%x\npion writes\n%x", seqs, got, want)
		}
	}
}

// The receiver reports written in place decode to one block per stream, 31
// at most per report, and pion marshals what they decode to into the same
// bytes.
func TestReportsWrittenAsPion(t *testing.T) {
	var ups []*forward.UpTrack
	for i := range 40 {
		ups = append(ups, lossyUp(uint32(0x100+i), 10, 11, uint16(14+i)))
	}
	ups = append(ups, lossyUp(0x999)) // nothing received: no block
	b := appendReports(nil, 0xABC, time.Now(), ups)
	pkts, err := rtcp.Unmarshal(b)
	if err != nil {
		t.Fatal(err)
	}
	again, err := rtcp.Marshal(pkts)
	if err != nil || !bytes.Equal(again, b) {
		t.Fatalf("pion re-marshals the reports as\n%x (%v)\nwritten\n%x", again, err, b)
	}
	if len(pkts) != 2 {
		t.Fatalf("%d reports for 40 streams, want 2", len(pkts))
	}
	i := 0
	for _, p := range pkts {
		rr := p.(*rtcp.ReceiverReport)
		if rr.SSRC != 0xABC {
			t.Fatalf("report from %x", rr.SSRC)
		}
		for _, blk := range rr.Reports {
			if blk.SSRC != uint32(0x100+i) || blk.TotalLost != uint32(2+i) || blk.LastSequenceNumber != uint32(14+i) {
				t.Fatalf("block %d: %+v", i, blk)
			}
			i++
		}
	}
	if i != 40 {
		t.Fatalf("%d blocks, want 40", i)
	}
}

// ownRoute is a publish connection's route to peer, keyed, and the
// publisher's context opening what the SFU seals.
func ownPublishRoute(t *testing.T) (*wire.Route, *net.UDPConn, *srtp.Context) {
	t.Helper()
	listen := func() *net.UDPConn {
		c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	sfu, peer := listen(), listen()
	sock, err := wire.NewSocket(sfu)
	if err != nil {
		t.Fatal(err)
	}
	k := wire.Keys{Profile: srtp.ProtectionProfileAeadAes128Gcm,
		LocalKey: bytes.Repeat([]byte{1}, 16), LocalSalt: bytes.Repeat([]byte{2}, 12),
		RemoteKey: bytes.Repeat([]byte{3}, 16), RemoteSalt: bytes.Repeat([]byte{4}, 12)}
	r := &wire.Route{}
	r.SetDest(wire.NewDest(sock, peer.LocalAddr().(*net.UDPAddr).AddrPort()))
	r.SetKeys(k)
	open, err := srtp.CreateContext(k.LocalKey, k.LocalSalt, k.Profile, srtp.SRTCPReplayProtection(64))
	if err != nil {
		t.Fatal(err)
	}
	return r, peer, open
}

// On the own data plane the NACKs and reports reach the publisher sealed by
// the SFU, not through pion's writer.
func TestReceivedSendsOnTheOwnDataPlane(t *testing.T) {
	route, peer, open := ownPublishRoute(t)
	r := newReceived(wire.NewInbound(), route)
	r.add(lossyUp(0x1234, 10, 11, 14)) // 12 and 13 lost
	done := make(chan struct{})
	defer close(done)
	viaPion := make(chan struct{}, 100)
	go r.run(done, func() time.Duration { return time.Hour }, func([]rtcp.Packet) error { viaPion <- struct{}{}; return nil })
	var nacked []uint16
	reported := false
	buf := make([]byte, 1500)
	_ = peer.SetReadDeadline(time.Now().Add(5 * time.Second))
	for !reported {
		n, err := peer.Read(buf)
		if err != nil {
			t.Fatalf("no receiver report in 5 s (NACKed %v): %v", nacked, err)
		}
		plain, err := open.DecryptRTCP(nil, buf[:n], nil)
		if err != nil {
			t.Fatalf("the publisher cannot open what the SFU sent: %v", err)
		}
		pkts, err := rtcp.Unmarshal(plain)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pkts {
			switch p := p.(type) {
			case *rtcp.TransportLayerNack:
				if p.SenderSSRC == r.ssrc || p.MediaSSRC != 0x1234 {
					t.Fatalf("NACK from %x (pion's path's %x) for %x", p.SenderSSRC, r.ssrc, p.MediaSSRC)
				}
				for _, pair := range p.Nacks {
					nacked = append(nacked, pair.PacketList()...)
				}
			case *rtcp.ReceiverReport:
				if len(p.Reports) != 1 || p.Reports[0].SSRC != 0x1234 || p.Reports[0].TotalLost != 2 || p.Reports[0].LastSequenceNumber != 14 {
					t.Fatalf("report %+v: want one block on 0x1234, 2 lost, highest 14", p.Reports)
				}
				reported = true
			}
		}
	}
	if len(nacked) != 2 || nacked[0] != 12 || nacked[1] != 13 {
		t.Fatalf("NACKed %v, want 12 and 13 once (the round trip is an hour)", nacked)
	}
	if len(viaPion) != 0 {
		t.Fatal("written through pion as well")
	}
}

// A round of NACKs and reports on the own data plane allocates nothing
// (through pion's WriteRTCP: the packets, their marshalling, the sealing).
func TestReceivedOwnRoundDoesNotAllocate(t *testing.T) {
	route, peer, _ := ownPublishRoute(t)
	go func() { // the publisher reads what it is sent
		buf := make([]byte, 1500)
		for {
			if _, err := peer.Read(buf); err != nil {
				return
			}
		}
	}()
	r := newReceived(wire.NewInbound(), route)
	var ups []*forward.UpTrack
	for i := range 4 {
		up := lossyUp(uint32(0x100+i), 1, 2, 5, 30)
		r.add(up)
		ups = append(ups, up)
	}
	d := r.own.dest()
	if d == nil {
		t.Fatal("no own path")
	}
	// Each round a packet arrives after two lost ones: a NACK every round.
	var arrivals [][]byte
	for i := range 102 {
		b, _ := (&rtp.Packet{Header: rtp.Header{Version: 2, PayloadType: 96, SequenceNumber: uint16(33 + 3*i), SSRC: 0x100}}).Marshal()
		arrivals = append(arrivals, b)
	}
	out := wire.NewBatch(4)
	seqs := make([]uint16, 0, 64)
	now := time.Now()
	r.sendOwn(d, now, 0, true, ups, seqs) // sizes the scratch
	i := 0
	allocs := testing.AllocsPerRun(100, func() {
		now = now.Add(time.Second)
		ups[0].Receive(now, arrivals[i], out)
		i++
		seqs = r.sendOwn(d, now, 0, true, ups, seqs)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per round, want 0", allocs)
	}
	if b := r.own.buf; len(b) < 2 || b[1] != 205 {
		t.Error("the last round sent no NACK: the test measures reports alone")
	}
}
