package forward

import (
	"bytes"
	"encoding/binary"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/rtp"
	"github.com/pion/srtp/v3"
	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/algo/bwe"
	"github.com/podium-sfu/podium/internal/wire"
)

// The own data plane: DownTracks whose connection's keys were exported protect
// their packets with their own SRTP contexts and send them in batches on a real
// UDP socket; nothing goes through pion's writer.

func testKeys(profile srtp.ProtectionProfile, seed byte) wire.Keys {
	keyLen, _ := profile.KeyLen()
	saltLen, _ := profile.SaltLen()
	fill := func(n int, b byte) []byte { return bytes.Repeat([]byte{b}, n) }
	return wire.Keys{Profile: profile,
		LocalKey: fill(keyLen, seed), LocalSalt: fill(saltLen, seed+1),
		RemoteKey: fill(keyLen, seed+2), RemoteSalt: fill(saltLen, seed+3)}
}

// peerKeys are the keys as the other end of the connection holds them.
func peerKeys(k wire.Keys) wire.Keys {
	return wire.Keys{Profile: k.Profile, LocalKey: k.RemoteKey, LocalSalt: k.RemoteSalt, RemoteKey: k.LocalKey, RemoteSalt: k.LocalSalt}
}

func udp(tb testing.TB) *net.UDPConn {
	tb.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

func addrPort(c *net.UDPConn) netip.AddrPort { return c.LocalAddr().(*net.UDPAddr).AddrPort() }

// receiverEnd is a receiver's socket and its SRTP context for what the SFU sends.
type receiverEnd struct {
	conn *net.UDPConn
	ctx  *srtp.Context
	buf  []byte
	out  []byte
	hdr  rtp.Header
}

func newReceiverEnd(tb testing.TB, k wire.Keys) *receiverEnd {
	tb.Helper()
	pk := peerKeys(k)
	ctx, err := pk.Inbound()
	if err != nil {
		tb.Fatal(err)
	}
	return &receiverEnd{conn: udp(tb), ctx: ctx, buf: make([]byte, 2048), out: make([]byte, 2048)}
}

// read returns the next packet, authenticated and decrypted.
func (r *receiverEnd) read(tb testing.TB) []byte {
	tb.Helper()
	_ = r.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, _, err := r.conn.ReadFromUDPAddrPort(r.buf)
	if err != nil {
		tb.Fatalf("receiver read: %v", err)
	}
	p, err := r.ctx.DecryptRTP(r.out[:0], r.buf[:n], &r.hdr)
	if err != nil {
		tb.Fatalf("receiver cannot authenticate/decrypt what the SFU sent: %v", err)
	}
	return p
}

func ownRoute(tb testing.TB, k wire.Keys, sock *wire.Socket, to netip.AddrPort) *wire.Route {
	tb.Helper()
	r := &wire.Route{}
	r.SetDest(wire.NewDest(sock, to))
	r.SetKeys(k)
	return r
}

func TestOwnDataPlaneSendsProtectedPackets(t *testing.T) {
	for _, profile := range []srtp.ProtectionProfile{srtp.ProtectionProfileAeadAes128Gcm, srtp.ProtectionProfileAes128CmHmacSha1_80} {
		t.Run(profile.String(), func(t *testing.T) { testOwnDataPlane(t, profile) })
	}
}

func testOwnDataPlane(t *testing.T, profile srtp.ProtectionProfile) {
	sfu, err := wire.NewSocket(udp(t))
	if err != nil {
		t.Fatal(err)
	}
	up := newVideoUp(t, &keyframeRequests{})
	var ends []*receiverEnd
	var pion []*recorder
	var downs []*DownTrack
	for i := range 2 {
		k := testKeys(profile, byte(10*i+1))
		end := newReceiverEnd(t, k)
		rec := &recorder{}
		d := NewDownTrack(up, "r")
		d.SetLink(NewLink(bwe.DefaultConfig()))
		d.SetRoute(ownRoute(t, k, sfu, addrPort(end.conn)))
		if _, err := d.Bind(videoContext(webrtc.SSRC(5000+i), webrtc.SSRC(6000+i)).withWriter(rec).withTWCC(3)); err != nil {
			t.Fatal(err)
		}
		up.AddDown(d)
		ends, pion, downs = append(ends, end), append(pion, rec), append(downs, d)
	}
	v := &video{t: t}
	feed(t, up, v.next(vp8Key, true), t0)
	delta := append(append([]byte(nil), vp8Delta...), bytes.Repeat([]byte{0xab}, 1100)...)
	for i := range 5 {
		feed(t, up, v.next(delta, true), t0.Add(time.Duration(i+1)*33*time.Millisecond))
	}
	var seqs [2][]uint16
	for i, end := range ends {
		for j := range 6 {
			p := end.read(t)
			var h rtp.Header
			n, err := h.Unmarshal(p)
			if err != nil {
				t.Fatal(err)
			}
			if h.SSRC != uint32(5000+i) || h.PayloadType != 96 {
				t.Fatalf("receiver %d packet %d: SSRC %d PT %d", i, j, h.SSRC, h.PayloadType)
			}
			if len(h.GetExtension(3)) != 2 {
				t.Fatalf("receiver %d packet %d carries no transport-wide sequence number", i, j)
			}
			want := vp8Key
			if j > 0 {
				want = delta
			}
			if !bytes.Equal(p[n:], want) {
				t.Fatalf("receiver %d packet %d: payload differs", i, j)
			}
			seqs[i] = append(seqs[i], h.SequenceNumber)
		}
		if len(pion[i].packets()) != 0 {
			t.Fatalf("receiver %d: %d packets went through pion's writer", i, len(pion[i].packets()))
		}
	}
	for i := range seqs {
		for j := 1; j < len(seqs[i]); j++ {
			if seqs[i][j] != seqs[i][j-1]+1 {
				t.Fatalf("receiver %d sequence numbers %v: not continuous", i, seqs[i])
			}
		}
	}

	// A NACK is answered as RTX on the receiver's RTX SSRC, through our socket.
	d, end := downs[0], ends[0]
	lost := seqs[0][3]
	d.HandleRTCP(t0.Add(200*time.Millisecond), []rtcp.Packet{&rtcp.TransportLayerNack{
		MediaSSRC: 5000, Nacks: rtcp.NackPairsFromSequenceNumbers([]uint16{lost})}})
	p := end.read(t)
	var h rtp.Header
	n, _ := h.Unmarshal(p)
	if h.SSRC != 6000 || binary.BigEndian.Uint16(p[n:]) != lost || !bytes.Equal(p[n+2:], delta) {
		t.Fatalf("NACK answer: SSRC %d, OSN %d (want RTX SSRC 6000, OSN %d)", h.SSRC, binary.BigEndian.Uint16(p[n:]), lost)
	}

	// Probe padding goes the same way, with its padding intact.
	b := wire.NewBatch(4)
	if sent := d.pad(t0.Add(300*time.Millisecond), 1, b); sent == 0 {
		t.Fatal("no probe padding queued")
	}
	b.Flush()
	p = end.read(t)
	h = rtp.Header{}
	if _, err := h.Unmarshal(p); err != nil || !h.Padding || h.SSRC != 5000 || p[len(p)-1] != probePadding {
		t.Fatalf("probe: padding %v SSRC %d last byte %d", h.Padding, h.SSRC, p[len(p)-1])
	}
	if len(pion[0].packets()) != 0 {
		t.Fatal("retransmission or probe went through pion's writer")
	}
}

// Until the connection's keys are exported nothing is sent, and the track is
// not committed to pion: once they are, it goes the own way.
func TestPendingRouteHoldsUntilKeyed(t *testing.T) {
	sfu, _ := wire.NewSocket(udp(t))
	k := testKeys(srtp.ProtectionProfileAeadAes128Gcm, 1)
	end := newReceiverEnd(t, k)
	up := newAudioUp(t)
	rec := &recorder{}
	d := NewDownTrack(up, "r")
	r := &wire.Route{}
	r.SetDest(wire.NewDest(sfu, addrPort(end.conn)))
	d.SetRoute(r)
	if _, err := d.Bind(audioContext(7000).withWriter(rec)); err != nil {
		t.Fatal(err)
	}
	up.AddDown(d)
	feed(t, up, rtpPacket(t, srcAudioSSRC, srcAudioPT, 1, 960, false, opusFrame), t0)
	if len(rec.packets()) != 0 {
		t.Fatal("sent through pion before the keys were known")
	}
	r.SetKeys(k)
	feed(t, up, rtpPacket(t, srcAudioSSRC, srcAudioPT, 2, 1920, false, opusFrame), t0)
	if p := end.read(t); !bytes.Equal(p[12:], opusFrame) {
		t.Fatalf("audio payload % x", p[12:])
	}
	if len(rec.packets()) != 0 {
		t.Fatal("sent through pion")
	}
}

// A route handed to pion (ICE-TCP, keys not exportable) keeps pion's writer.
func TestPionRouteUsesPionWriter(t *testing.T) {
	up := newAudioUp(t)
	rec := &recorder{}
	d := NewDownTrack(up, "r")
	r := &wire.Route{}
	r.SetKeys(testKeys(srtp.ProtectionProfileAeadAes128Gcm, 1)) // keyed but no UDP pair of ours
	d.SetRoute(r)
	if _, err := d.Bind(audioContext(7000).withWriter(rec)); err != nil {
		t.Fatal(err)
	}
	up.AddDown(d)
	feed(t, up, rtpPacket(t, srcAudioSSRC, srcAudioPT, 1, 960, false, opusFrame), t0)
	if len(rec.packets()) != 1 {
		t.Fatalf("%d packets through pion, want 1", len(rec.packets()))
	}
}

// RTCP taken at the socket: one compound with a receiver report, a NACK and
// transport-wide feedback goes through Link.HandleRTCP — the NACK is answered
// into the socket reader's batch, the feedback reaches the estimator.
func TestLinkHandlesRTCPTakenAtTheSocket(t *testing.T) {
	sfu, _ := wire.NewSocket(udp(t))
	k := testKeys(srtp.ProtectionProfileAeadAes128Gcm, 40)
	end := newReceiverEnd(t, k)
	up := newVideoUp(t, &keyframeRequests{})
	l := NewLink(bwe.DefaultConfig())
	d := NewDownTrack(up, "r")
	d.SetLink(l)
	d.SetRoute(ownRoute(t, k, sfu, addrPort(end.conn)))
	if _, err := d.Bind(videoContext(5000, 6000).withWriter(&recorder{}).withTWCC(3)); err != nil {
		t.Fatal(err)
	}
	up.AddDown(d)
	v := &video{t: t}
	feed(t, up, v.next(vp8Key, true), t0)
	feed(t, up, v.next(vp8Delta, true), t0.Add(33*time.Millisecond))
	var first rtp.Header
	_, _ = first.Unmarshal(end.read(t))
	end.read(t)

	fb := feedbacks(t, 3)[0]
	compound, err := rtcp.Marshal([]rtcp.Packet{
		&rtcp.ReceiverReport{SSRC: 1, Reports: []rtcp.ReceptionReport{{SSRC: 5000}}},
		&rtcp.TransportLayerNack{SenderSSRC: 1, MediaSSRC: 5000, Nacks: rtcp.NackPairsFromSequenceNumbers([]uint16{first.SequenceNumber})},
	})
	if err != nil {
		t.Fatal(err)
	}
	compound = append(compound, fb...)
	out := wire.NewBatch(4)
	l.HandleRTCP(t0.Add(100*time.Millisecond), compound, out)
	if out.Len() != 1 {
		t.Fatalf("%d answers queued, want the one RTX", out.Len())
	}
	out.Flush()
	p := end.read(t)
	var h rtp.Header
	n, _ := h.Unmarshal(p)
	if h.SSRC != 6000 || binary.BigEndian.Uint16(p[n:]) != first.SequenceNumber {
		t.Fatalf("answer on SSRC %d for %d, want RTX 6000 for %d", h.SSRC, binary.BigEndian.Uint16(p[n:]), first.SequenceNumber)
	}
	if s := l.Stats(); s.Feedbacks != 1 || s.MalformedFeedback != 0 {
		t.Fatalf("feedbacks %d malformed %d, want 1 and 0", s.Feedbacks, s.MalformedFeedback)
	}
	d.SetLink(nil)
	if l.track(5000) != nil {
		t.Fatal("a DownTrack taken off its link is still found by SSRC")
	}
}

// On the socket reader's batch (Held) a frame's packets wait for its last one
// and then leave together, each receiver's as one train; audio and a frame's
// last packet are sent at once.
func TestHeldBatchSendsAFrameWhenItsLastPacketIsIn(t *testing.T) {
	sfu, err := wire.NewSocket(udp(t))
	if err != nil {
		t.Fatal(err)
	}
	up := newVideoUp(t, &keyframeRequests{})
	var ends []*receiverEnd
	for i := range 2 {
		k := testKeys(srtp.ProtectionProfileAeadAes128Gcm, byte(10*i+1))
		end := newReceiverEnd(t, k)
		d := NewDownTrack(up, "r")
		d.SetLink(NewLink(bwe.DefaultConfig()))
		d.SetRoute(ownRoute(t, k, sfu, addrPort(end.conn)))
		if _, err := d.Bind(videoContext(webrtc.SSRC(5000+i), webrtc.SSRC(6000+i)).withWriter(&recorder{}).withTWCC(3)); err != nil {
			t.Fatal(err)
		}
		up.AddDown(d)
		ends = append(ends, end)
	}
	out := wire.NewBatch(64)
	out.Held = true
	var c wire.Counters
	out.Stats = &c
	v := &video{t: t}
	up.Receive(t0, v.next(vp8Key, true), out) // a one-packet frame: sent at once
	if out.Len() != 0 {
		t.Fatalf("a frame's only packet left %d datagrams queued", out.Len())
	}
	part := append(append([]byte(nil), vp8Delta...), bytes.Repeat([]byte{0xab}, 1100)...)
	for i := range 3 {
		up.Receive(t0.Add(33*time.Millisecond), v.next(part, false), out)
		if out.Len() != 2*(i+1) {
			t.Fatalf("after the frame's packet %d, %d datagrams queued; want %d", i+1, out.Len(), 2*(i+1))
		}
	}
	before := c.Messages.Load()
	up.Receive(t0.Add(33*time.Millisecond), v.next(vp8Delta, true), out)
	if out.Len() != 0 {
		t.Fatalf("the frame's last packet left %d datagrams queued", out.Len())
	}
	want := uint64(2) // one train per receiver
	if !sfu.GSO() {
		want = 8
	}
	if msgs := c.Messages.Load() - before; msgs != want {
		t.Fatalf("the frame went in %d messages; want %d", msgs, want)
	}
	for i, end := range ends {
		var last uint16
		for j := range 5 {
			var h rtp.Header
			if _, err := h.Unmarshal(end.read(t)); err != nil {
				t.Fatal(err)
			}
			if j > 0 && h.SequenceNumber != last+1 {
				t.Fatalf("receiver %d packet %d: sequence %d after %d", i, j, h.SequenceNumber, last)
			}
			last = h.SequenceNumber
			if h.Marker != (j == 0 || j == 4) {
				t.Fatalf("receiver %d packet %d: marker %v", i, j, h.Marker)
			}
		}
	}
}

// On the own path a packet's send time for the estimator is when the flush
// handed it to the socket (wire.Batch.Stamp, Link.Departed), not when it was
// stamped: here the link's clock reads a second early, and is not even read
// per packet (bwe.Estimator.OnQueued), and the round trip from its feedback
// is still the path's 20 ms.
func TestOwnPathSendTimeIsTheFlush(t *testing.T) {
	sfu, err := wire.NewSocket(udp(t))
	if err != nil {
		t.Fatal(err)
	}
	up := newVideoUp(t, &keyframeRequests{})
	k := testKeys(srtp.ProtectionProfileAeadAes128Gcm, 1)
	end := newReceiverEnd(t, k)
	d := NewDownTrack(up, "r")
	l := NewLink(bwe.DefaultConfig())
	clockReads := 0
	l.clock = func() time.Time { clockReads++; return time.Now().Add(-time.Second) }
	d.SetLink(l)
	d.SetRoute(ownRoute(t, k, sfu, addrPort(end.conn)))
	if _, err := d.Bind(videoContext(5000, 6000).withWriter(&recorder{}).withTWCC(3)); err != nil {
		t.Fatal(err)
	}
	up.AddDown(d)
	out := wire.NewBatch(8)
	up.Receive(t0, (&video{t: t}).next(vp8Key, true), out) // flushed at once
	end.read(t)
	if clockReads != 0 {
		t.Errorf("the link's clock was read %d times for a packet the batch stamps", clockReads)
	}
	acked := time.Now().Add(20 * time.Millisecond)
	fb := &rtcp.TransportLayerCC{BaseSequenceNumber: 1, PacketStatusCount: 1, ReferenceTime: 1,
		PacketChunks: []rtcp.PacketStatusChunk{&rtcp.RunLengthChunk{PacketStatusSymbol: rtcp.TypeTCCPacketReceivedSmallDelta, RunLength: 1}},
		RecvDeltas:   []*rtcp.RecvDelta{{Type: rtcp.TypeTCCPacketReceivedSmallDelta, Delta: 0}}}
	d.HandleRTCP(acked, []rtcp.Packet{fb})
	if rtt := l.Stats().Estimator.RTT; rtt < 20*time.Millisecond || rtt > 200*time.Millisecond {
		t.Errorf("round trip %v, want about 20 ms: the send time is the flush's", rtt)
	}
}

// vp8WithPictureID is a VP8 payload whose descriptor carries a 15-bit picture
// id, a keyframe's when key.
func vp8WithPictureID(pid uint16, key bool) []byte {
	vp8 := []byte{0x51, 0xaa, 0xbb, 0xcc} // a delta frame's header
	if key {
		vp8 = []byte{0x50, 0x42, 0x00, 0x9d, 0x01, 0x2a, 0x80, 0x02, 0xe0, 0x01}
	}
	return append([]byte{0x90, 0x80, 0x80 | byte(pid>>8), byte(pid)}, vp8...)
}

// Rewrite, send, restore: a destination's picture id is written into the
// shared packet only while its copy is sealed; the packet is as it came once
// the fan-out is done (the source's store keeps it, and the next destination
// reads it), and the receiver gets its own numbering.
func TestFanOutLeavesTheSharedPacketAsItCame(t *testing.T) {
	sfu, err := wire.NewSocket(udp(t))
	if err != nil {
		t.Fatal(err)
	}
	newUp := func(ssrc uint32, rid string, enc int) *UpTrack {
		return NewUpTrack(UpTrackParams{Source: "s", Kind: webrtc.RTPCodecTypeVideo, SSRC: ssrc, Codec: vp8Codec, RID: rid,
			Encoding: enc, SendKeyframeRequest: func(uint32) error { return nil }})
	}
	low, high := newUp(0x31, "q", 0), newUp(0x33, "f", 2)
	k := testKeys(srtp.ProtectionProfileAeadAes128Gcm, 1)
	end := newReceiverEnd(t, k)
	d := NewDownTrack(high, "r")
	d.Attach(low)
	d.SetRoute(ownRoute(t, k, sfu, addrPort(end.conn)))
	if _, err := d.Bind(videoContext(0xA, 0xB)); err != nil {
		t.Fatal(err)
	}
	high.AddDown(d)
	low.AddDown(d)
	d.SetLayer(2, 2)
	feed(t, high, rtpPacket(t, 0x33, srcVideoPT, 1, 0, true, vp8WithPictureID(100, true)), t0)
	end.read(t)
	d.SetLayer(0, 2)
	raw := rtpPacket(t, 0x31, srcVideoPT, 1, 0, true, vp8WithPictureID(5000, true))
	sent := bytes.Clone(raw)
	feed(t, low, raw, t0.Add(33*time.Millisecond))
	if !bytes.Equal(raw, sent) {
		t.Fatalf("the shared packet changed in the fan-out:\n% x\n% x", sent, raw)
	}
	var h rtp.Header
	got := end.read(t)
	n, err := h.Unmarshal(got)
	if err != nil {
		t.Fatal(err)
	}
	if pid := binary.BigEndian.Uint16(got[n+2:]) & 0x7fff; pid != 101 {
		t.Fatalf("the receiver got picture id %d, want 101: its numbering goes on across the switch", pid)
	}
}
