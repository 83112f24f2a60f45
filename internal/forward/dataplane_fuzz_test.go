package forward

import (
	"testing"
	"time"

	"github.com/pion/rtp"
	"github.com/pion/srtp/v3"

	"github.com/podium-sfu/podium/internal/wire"
)

// FuzzOwnDataPlane feeds untrusted received packets (what a sender's
// authenticated SRTP decrypts to: any bytes) through the own data plane's
// send side: parse, projection, rewrite, protection into a batch, sendmmsg,
// then a NACK for every sequence number sent, answered from the source's
// store. It must never panic, and everything the receiver gets must
// authenticate and parse.
func FuzzOwnDataPlane(f *testing.F) {
	f.Add(rtpPacketF(f, 1, vp8Key), rtpPacketF(f, 2, vp8Delta))
	f.Add(rtpPacketF(f, 1, vp8Key), []byte{0x80, 0x60, 0, 2, 0, 0, 0, 1, 0x11, 0x11, 0x11, 0x11})
	f.Add([]byte{0x90, 0x60, 0, 1, 0, 0, 0, 1, 0x11, 0x11, 0x11, 0x11, 0xbe, 0xde, 0, 1, 0x10, 0xff, 0, 0, 0x10}, []byte{})
	f.Add(rtpPacketF(f, 1, vp8Key), []byte{0xa0, 0x60, 0, 2, 0, 0, 0, 1, 0x11, 0x11, 0x11, 0x11, 0x10, 0x00, 0x05})
	sock, err := wire.NewSocket(udp(f))
	if err != nil {
		f.Fatal(err)
	}
	k := testKeys(srtp.ProtectionProfileAeadAes128Gcm, 7)
	f.Fuzz(func(t *testing.T, a, b []byte) {
		end := newReceiverEnd(t, k)
		up := newVideoUp(t, nil)
		d := NewDownTrack(up, "r")
		d.SetRoute(ownRoute(t, k, sock, addrPort(end.conn)))
		if _, err := d.Bind(videoContext(0xA, 0xB).withWriter(&recorder{})); err != nil {
			t.Fatal(err)
		}
		up.AddDown(d)
		var pkt Packet
		for i, raw := range [][]byte{a, b} {
			raw = append([]byte(nil), raw...)
			if up.parse(time.Now(), raw, &pkt, true) {
				pkt.Arrival = t0.Add(time.Duration(i) * time.Millisecond)
				up.forward(&pkt, up.testOut())
			}
		}
		sent := d.Counters().Packets
		var seqs []uint16
		_ = end.conn.SetReadDeadline(time.Now().Add(time.Second))
		for range sent {
			p := end.read(t)
			var h rtp.Header
			if _, err := h.Unmarshal(p); err != nil {
				t.Fatalf("the receiver cannot parse what was sent: %v", err)
			}
			seqs = append(seqs, h.SequenceNumber)
		}
		out := wire.NewBatch(4)
		for _, s := range seqs {
			if out.Free() == 0 {
				out.Flush()
			}
			d.resend(s, t0.Add(time.Second), out)
		}
		out.Flush()
	})
}

func rtpPacketF(f *testing.F, seq uint16, payload []byte) []byte {
	return rtpPacket(f, srcVideoSSRC, srcVideoPT, seq, uint32(seq)*3000, true, payload)
}
