package bench

import (
	"net"
	"testing"

	"github.com/pion/rtp"
	"github.com/pion/srtp/v3"
)

// The costs every forwarded packet pays outside our code, measured on this
// machine for docs/performance.md: SRTP protection of a 1200-byte packet with
// each profile browsers negotiate, and one UDP datagram over loopback.

func BenchmarkSRTPProtect1200(b *testing.B) {
	for _, c := range []struct {
		name    string
		profile srtp.ProtectionProfile
	}{
		{"aead-aes-128-gcm", srtp.ProtectionProfileAeadAes128Gcm},
		{"aes-128-cm-hmac-sha1-80", srtp.ProtectionProfileAes128CmHmacSha1_80},
	} {
		b.Run(c.name, func(b *testing.B) {
			keyLen, err := c.profile.KeyLen()
			if err != nil {
				b.Fatal(err)
			}
			saltLen, err := c.profile.SaltLen()
			if err != nil {
				b.Fatal(err)
			}
			ctx, err := srtp.CreateContext(make([]byte, keyLen), make([]byte, saltLen), c.profile)
			if err != nil {
				b.Fatal(err)
			}
			hdr := &rtp.Header{Version: 2, PayloadType: 96, SSRC: 1}
			plain, err := (&rtp.Packet{Header: *hdr, Payload: make([]byte, 1200)}).Marshal()
			if err != nil {
				b.Fatal(err)
			}
			dst := make([]byte, 0, 1500)
			b.SetBytes(int64(len(plain)))
			b.ReportAllocs()
			seq := uint16(0)
			for b.Loop() {
				seq++
				plain[2], plain[3] = byte(seq>>8), byte(seq)
				hdr.SequenceNumber = seq
				if dst, err = ctx.EncryptRTP(dst[:0], plain, hdr); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkUDPLoopbackSend1200(b *testing.B) {
	rx, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		b.Fatal(err)
	}
	defer rx.Close()
	done := make(chan struct{})
	go func() { // drain, so the receive buffer never fills
		defer close(done)
		buf := make([]byte, 1500)
		for {
			if _, err := rx.Read(buf); err != nil {
				return
			}
		}
	}()
	tx, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		b.Fatal(err)
	}
	defer tx.Close()
	to := rx.LocalAddr().(*net.UDPAddr).AddrPort()
	pkt := make([]byte, 1200)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tx.WriteToUDPAddrPort(pkt, to); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	rx.Close()
	<-done
}
