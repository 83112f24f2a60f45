package forward

import (
	"bytes"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/pion/rtp"
	"github.com/pion/srtp/v3"
	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/algo/bwe"
	"github.com/podium-sfu/podium/internal/wire"
)

// socketLoop is the whole per-packet path, socket to socket, with real SRTP:
// a publisher protects and sends a video packet to the SFU's UDP socket; the
// SFU reads it and, as the socket's reader does for a stream the data plane
// took (peer's ingress), authenticates and decrypts it in place with the
// connection's inbound context (wire.Inbound.Open) and hands it to the
// stream's handler, UpTrack.Receive, which parses it and forwards it to n
// destinations, each rewritten, stamped, protected with its own context and
// sent in one sendmmsg batch from the same socket; each receiver reads and
// decrypts its copy.
type socketLoop struct {
	pubConn *net.UDPConn
	pubCtx  *srtp.Context
	sfuConn *net.UDPConn
	sfuOpen *wire.RTPOpener
	in      *wire.Inbound // the publish connection's taken streams
	reader  *wire.Reader  // the SFU socket's, as under pion's mux
	out     *wire.Batch   // the socket reader's
	up      *UpTrack
	ends    []*receiverEnd
	seq     uint16
	ts      uint32
	plain   []byte // the publisher's packet before protection
	wireBuf []byte // the publisher's protected packet
	hdr     rtp.Header
}

func newSocketLoop(tb testing.TB, n int, profile srtp.ProtectionProfile) *socketLoop {
	tb.Helper()
	l := &socketLoop{pubConn: udp(tb), sfuConn: udp(tb),
		wireBuf: make([]byte, 2048), out: wire.NewBatch(16), in: wire.NewInbound()}
	pubKeys := testKeys(profile, 100) // the publish connection, as the SFU holds it
	var err error
	if l.sfuOpen, err = pubKeys.RTPOpener(); err != nil {
		tb.Fatal(err)
	}
	pk := peerKeys(pubKeys)
	if l.pubCtx, err = pk.Outbound(); err != nil {
		tb.Fatal(err)
	}
	sock, err := wire.NewSocket(l.sfuConn)
	if err != nil {
		tb.Fatal(err)
	}
	if l.reader, err = wire.NewReader(l.sfuConn, false); err != nil {
		tb.Fatal(err)
	}
	l.up = newVideoUp(tb, &keyframeRequests{})
	l.in.SetOpener(l.sfuOpen)
	l.in.Take(srcVideoSSRC, l.up.Receive)
	for i := range n {
		k := testKeys(profile, byte(i*4))
		end := newReceiverEnd(tb, k)
		d := NewDownTrack(l.up, fmt.Sprint("r", i))
		d.SetLink(NewLink(bwe.DefaultConfig()))
		d.SetRoute(ownRoute(tb, k, sock, addrPort(end.conn)))
		if _, err := d.Bind(videoContext(webrtc.SSRC(1000+i), webrtc.SSRC(2000+i)).withWriter(&recorder{}).withTWCC(3)); err != nil {
			tb.Fatal(err)
		}
		l.up.AddDown(d)
		l.ends = append(l.ends, end)
	}
	l.plain = rtpPacket(tb, srcVideoSSRC, srcVideoPT, 0, 0, true, vp8Key)
	l.step(tb) // the keyframe opens the projection
	payload := append(append([]byte(nil), vp8Delta...), bytes.Repeat([]byte{0x5a}, 1200-len(vp8Delta))...)
	l.plain = rtpPacket(tb, srcVideoSSRC, srcVideoPT, 0, 0, true, payload)
	return l
}

// step sends, forwards and receives one packet.
func (l *socketLoop) step(tb testing.TB) {
	l.forwardOne(tb)
	for _, e := range l.ends {
		e.read(tb)
	}
}

// forwardOne has the publisher send the next packet and the SFU, as the
// socket's reader does, read it (recvmmsg), open it in place and forward it.
func (l *socketLoop) forwardOne(tb testing.TB) {
	tb.Helper()
	l.seq++
	l.ts += 3000
	l.plain[2], l.plain[3] = byte(l.seq>>8), byte(l.seq)
	l.plain[4], l.plain[5], l.plain[6], l.plain[7] = byte(l.ts>>24), byte(l.ts>>16), byte(l.ts>>8), byte(l.ts)
	ct, err := l.pubCtx.EncryptRTP(l.wireBuf[:0], l.plain, &l.hdr)
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := l.pubConn.WriteToUDPAddrPort(ct, addrPort(l.sfuConn)); err != nil {
		tb.Fatal(err)
	}
	b, _, _, err := l.reader.Next()
	if err != nil {
		tb.Fatal(err)
	}
	plain, handle, st := l.in.Open(b)
	if st != wire.Opened {
		tb.Fatalf("the taken stream's packet was not opened: %d", st)
	}
	handle(time.Now(), plain, l.out)
}

func TestSocketToSocketPathDoesNotAllocate(t *testing.T) {
	for _, profile := range []srtp.ProtectionProfile{srtp.ProtectionProfileAeadAes128Gcm, srtp.ProtectionProfileAes128CmHmacSha1_80} {
		l := newSocketLoop(t, 3, profile)
		for range 10 { // warm up: contexts' per-SSRC state, timers' first buckets
			l.step(t)
		}
		before := l.ends[0].hdr.SequenceNumber
		allocs := testing.AllocsPerRun(500, func() { l.step(t) })
		if allocs != 0 && raceEnabled && profile != srtp.ProtectionProfileAeadAes128Gcm {
			t.Logf("%v: %v allocations per packet under the race detector (pooled HMAC state); checked without -race", profile, allocs)
		} else if allocs != 0 {
			t.Errorf("%v: %v allocations per packet, socket to 3 sockets, want 0", profile, allocs)
		}
		if got := l.ends[0].hdr.SequenceNumber - before; got < 500 {
			t.Errorf("%v: the receiver got %d packets during the measurement", profile, got)
		}
	}
}

// BenchmarkSocketToSocket is the loop's cost per received packet (fan-out
// 3), both ends included.
func BenchmarkSocketToSocket(b *testing.B) {
	l := newSocketLoop(b, 3, srtp.ProtectionProfileAeadAes128Gcm)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		l.step(b)
	}
}
