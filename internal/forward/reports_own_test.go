package forward

import (
	"bytes"
	"testing"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/srtp/v3"

	"github.com/podium-sfu/podium/internal/wire"
)

// ownReportTrack is a video DownTrack on the own data plane, forwarding
// (its first packet, a keyframe, read by the receiver), whose pion RTCP
// writer records what it is given.
func ownReportTrack(t *testing.T, profile srtp.ProtectionProfile) (*UpTrack, *DownTrack, *receiverEnd, *[]rtcp.Packet) {
	t.Helper()
	sfu, err := wire.NewSocket(udp(t))
	if err != nil {
		t.Fatal(err)
	}
	k := testKeys(profile, 40)
	end := newReceiverEnd(t, k)
	up := newVideoUp(t, nil)
	d := NewDownTrack(up, "r")
	d.SetRoute(ownRoute(t, k, sfu, addrPort(end.conn)))
	if _, err := d.Bind(videoContext(0xA, 0xB).withWriter(&recorder{})); err != nil {
		t.Fatal(err)
	}
	up.AddDown(d)
	var viaPion []rtcp.Packet
	d.SetRTCPWriter(func(p []rtcp.Packet) error { viaPion = append(viaPion, p...); return nil })
	feed(t, up, rtpPacket(t, srcVideoSSRC, srcVideoPT, 100, 9000, true, vp8Key), t0)
	end.read(t)
	return up, d, end, &viaPion
}

// readRTCP returns the next datagram the receiver gets, as SRTCP
// authenticated and decrypted.
func (r *receiverEnd) readRTCP(tb testing.TB) []byte {
	tb.Helper()
	_ = r.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, _, err := r.conn.ReadFromUDPAddrPort(r.buf)
	if err != nil {
		tb.Fatalf("receiver read: %v", err)
	}
	p, err := r.ctx.DecryptRTCP(r.out[:0], r.buf[:n], nil)
	if err != nil {
		tb.Fatalf("receiver cannot authenticate/decrypt the SRTCP the SFU sent: %v", err)
	}
	return p
}

// On the own data plane a relayed sender report is sealed by the track and
// sent on its route, as its RTP is, never through pion's SRTCP session: the
// receiver opens the report pion's marshalling would have sent.
func TestSenderReportRelayedOnTheOwnDataPlane(t *testing.T) {
	for _, profile := range []srtp.ProtectionProfile{srtp.ProtectionProfileAeadAes128Gcm, srtp.ProtectionProfileAes128CmHmacSha1_80} {
		t.Run(profile.String(), func(t *testing.T) {
			_, d, end, viaPion := ownReportTrack(t, profile)
			out := wire.NewBatch(4)
			for i := range 3 {
				d.relaySenderReport(SenderReport{NTPTime: 0x1122334455667788 + uint64(i), RTPTime: 9090}, 0, out)
				if out.Len() != 1 {
					t.Fatalf("report %d: %d datagrams queued, want 1", i, out.Len())
				}
				out.Flush()
				want, err := (&rtcp.SenderReport{SSRC: 0xA, NTPTime: 0x1122334455667788 + uint64(i), RTPTime: 9090 + d.proj.TimestampOffset(),
					PacketCount: 1, OctetCount: uint32(len(vp8Key))}).Marshal()
				if err != nil {
					t.Fatal(err)
				}
				if got := end.readRTCP(t); !bytes.Equal(got, want) {
					t.Fatalf("report %d: the receiver got\n%x\nwant\n%x", i, got, want)
				}
			}
			if len(*viaPion) != 0 {
				t.Fatalf("%d reports went through pion's writer", len(*viaPion))
			}
			// A report of an encoding not being forwarded is not sent either way.
			d.relaySenderReport(SenderReport{NTPTime: 1, RTPTime: 1}, 2, out)
			if out.Len() != 0 || len(*viaPion) != 0 {
				t.Fatal("relayed a sender report of an encoding that is not forwarded")
			}
		})
	}
}

// Before the connection's keys are known a report goes nowhere: through
// pion's session it would take SRTCP indexes (and GCM nonces) the track's
// own sealer then repeats.
func TestSenderReportHeldWhileTheRouteIsPending(t *testing.T) {
	sfu, _ := wire.NewSocket(udp(t))
	end := newReceiverEnd(t, testKeys(srtp.ProtectionProfileAeadAes128Gcm, 1))
	up := newAudioUp(t)
	d := NewDownTrack(up, "r")
	r := &wire.Route{}
	r.SetDest(wire.NewDest(sfu, addrPort(end.conn)))
	d.SetRoute(r)
	if _, err := d.Bind(audioContext(7000).withWriter(&recorder{})); err != nil {
		t.Fatal(err)
	}
	up.AddDown(d)
	writes := 0
	d.SetRTCPWriter(func([]rtcp.Packet) error { writes++; return nil })
	out := wire.NewBatch(4)
	d.relaySenderReport(SenderReport{NTPTime: 1, RTPTime: 1}, 0, out)
	if writes != 0 || out.Len() != 0 {
		t.Fatalf("%d reports through pion, %d queued, before the keys", writes, out.Len())
	}
	// A route handed to pion keeps pion's writer for the reports too.
	r.UsePion()
	d.SetRoute(nil)
	d.SetRoute(r)
	feed(t, up, rtpPacket(t, srcAudioSSRC, srcAudioPT, 1, 960, false, opusFrame), t0)
	d.relaySenderReport(SenderReport{NTPTime: 1, RTPTime: 1}, 0, out)
	if writes != 1 || out.Len() != 0 {
		t.Fatalf("pion route: %d reports through pion, %d queued; want 1, 0", writes, out.Len())
	}
}

// Relaying a report on the own data plane allocates nothing, with AES-GCM too
// (pion's WriteRTCP marshalled it and its SRTCP sealing boxed the additional
// data).
func TestSenderReportSealedWithoutAllocating(t *testing.T) {
	_, d, end, _ := ownReportTrack(t, srtp.ProtectionProfileAeadAes128Gcm)
	go func() { // the receiver reads what it is sent
		buf := make([]byte, 1500)
		for {
			if _, err := end.conn.Read(buf); err != nil {
				return
			}
		}
	}()
	out := wire.NewBatch(4)
	ntp := uint64(0x1122334455667788)
	allocs := testing.AllocsPerRun(100, func() {
		ntp++
		d.relaySenderReport(SenderReport{NTPTime: ntp, RTPTime: 9090}, 0, out)
		if out.Flush() != 1 {
			t.Fatal("report not sent")
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per relayed sender report, want 0", allocs)
	}
}

// A sender report the data plane takes at the socket (ReceiveReport, the
// reader's batch) is kept with the time it was read and reaches the receiver
// as one relayed through pion's reader does, without an allocation; a
// compound without the track's report changes nothing.
func TestSenderReportTakenAtTheSocket(t *testing.T) {
	up, d, end, viaPion := ownReportTrack(t, srtp.ProtectionProfileAeadAes128Gcm)
	out := wire.NewBatch(16)
	at := t0.Add(time.Minute)
	sdes := &rtcp.SourceDescription{Chunks: []rtcp.SourceDescriptionChunk{{Source: srcVideoSSRC,
		Items: []rtcp.SourceDescriptionItem{{Type: rtcp.SDESCNAME, Text: "x"}}}}}
	up.ReceiveReport(at, sentBy(t, &rtcp.SenderReport{SSRC: srcVideoSSRC + 1, NTPTime: 1, RTPTime: 1}, sdes), out)
	if _, ok := up.LastSenderReport(); ok || out.Len() != 0 {
		t.Fatalf("another stream's report: kept %v, %d queued", ok, out.Len())
	}
	up.ReceiveReport(at, sentBy(t, &rtcp.SenderReport{SSRC: srcVideoSSRC, NTPTime: 0x1122334455667788, RTPTime: 9090}, sdes), out)
	if sr, ok := up.LastSenderReport(); !ok || sr.NTPTime != 0x1122334455667788 || sr.RTPTime != 9090 || !sr.At.Equal(at) {
		t.Fatalf("kept %+v %v", sr, ok)
	}
	if out.Len() != 1 || out.Flush() != 1 {
		t.Fatal("the translation was not queued in the reader's batch")
	}
	want, err := (&rtcp.SenderReport{SSRC: 0xA, NTPTime: 0x1122334455667788, RTPTime: 9090 + d.proj.TimestampOffset(),
		PacketCount: 1, OctetCount: uint32(len(vp8Key))}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if got := end.readRTCP(t); !bytes.Equal(got, want) {
		t.Fatalf("the receiver got\n%x\nwant\n%x", got, want)
	}
	if len(*viaPion) != 0 {
		t.Fatalf("%d reports went through pion's writer", len(*viaPion))
	}
	go func() { // the receiver reads what it is sent
		buf := make([]byte, 1500)
		for {
			if _, err := end.conn.Read(buf); err != nil {
				return
			}
		}
	}()
	b := sentBy(t, &rtcp.SenderReport{SSRC: srcVideoSSRC, NTPTime: 1, RTPTime: 9090}, sdes)
	allocs := testing.AllocsPerRun(100, func() {
		b[15]++ // the NTP time's low byte
		up.ReceiveReport(at, b, out)
		if out.Flush() != 1 {
			t.Fatal("report not sent")
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per sender report taken at the socket, want 0", allocs)
	}
}

// The reader's batch, full, is flushed to make room for the translation
// (fanout-50 relays a report to 50 receivers through 16 slots).
func TestSenderReportTakenAtTheSocketFillsTheBatch(t *testing.T) {
	up, _, end, _ := ownReportTrack(t, srtp.ProtectionProfileAeadAes128Gcm)
	sock, err := wire.NewSocket(udp(t))
	if err != nil {
		t.Fatal(err)
	}
	out := wire.NewBatch(1)
	out.Commit(len(append(out.Slot(), 1, 2, 3)), wire.NewDest(sock, addrPort(end.conn))) // the reader's batch, full
	up.ReceiveReport(t0, sentBy(t, &rtcp.SenderReport{SSRC: srcVideoSSRC, NTPTime: 7, RTPTime: 9090}), out)
	if out.Len() != 1 {
		t.Fatalf("%d queued, want the report", out.Len())
	}
	out.Flush()
	_ = end.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, _, err := end.conn.ReadFromUDPAddrPort(end.buf); err != nil || n != 3 {
		t.Fatalf("the batch's first datagram: %d bytes, %v", n, err)
	}
	if got := end.readRTCP(t); len(got) != 28 {
		t.Fatalf("the receiver got %x, want the relayed report", got)
	}
}
