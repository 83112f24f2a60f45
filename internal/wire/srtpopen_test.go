package wire

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/pion/srtp/v3"
)

// rtpOpenerPair is an opener and pion's inbound context for the same keys,
// and a pion sender to them.
func rtpOpenerPair(t testing.TB, profile srtp.ProtectionProfile) (*RTPOpener, *srtp.Context, *srtp.Context) {
	t.Helper()
	k := sealerKeys(t, profile)
	k.RemoteKey, k.RemoteSalt = k.LocalKey, k.LocalSalt // a real pair, as in openerPair
	o, err := k.RTPOpener()
	if err != nil {
		t.Fatal(err)
	}
	pion, err := k.Inbound()
	if err != nil {
		t.Fatal(err)
	}
	p := peerOf(k)
	sender, err := srtp.CreateContext(p.LocalKey, p.LocalSalt, profile)
	if err != nil {
		t.Fatal(err)
	}
	return o, pion, sender
}

// rtpDeliveries is what a peer's SRTP looks like on arrival: rtpSends
// sealed, then delivered out of order, some twice, some forged, and one far
// too late for the replay window.
func rtpDeliveries(t testing.TB, sender *srtp.Context) [][]byte {
	rng := rand.New(rand.NewPCG(11, 13))
	var sealed [][]byte
	for _, p := range rtpSends(t) {
		b, err := sender.EncryptRTP(nil, p, nil)
		if err != nil {
			t.Fatal(err)
		}
		sealed = append(sealed, b)
	}
	var out [][]byte
	for i := 0; i < len(sealed); i++ {
		switch r := rng.IntN(10); {
		case r == 0 && i+1 < len(sealed): // reordered
			out = append(out, sealed[i+1], sealed[i])
			i++
		case r == 1: // twice
			out = append(out, sealed[i], sealed[i])
		case r == 2: // forged, then the real one
			forged := bytes.Clone(sealed[i])
			forged[len(forged)-1-rng.IntN(len(forged)-12)] ^= 0x20
			out = append(out, forged, sealed[i])
		default:
			out = append(out, sealed[i])
		}
	}
	return append(out, sealed[2]) // long gone: refused by the window
}

// The opener accepts exactly what pion's inbound context accepts, with the
// same bytes out: two SSRCs, one across a sequence number wrap, resends from
// before it, packets out of order, repeated, forged and far too late.
func TestRTPOpenerMatchesPion(t *testing.T) {
	for _, profile := range sealerProfiles {
		t.Run(profile.String(), func(t *testing.T) {
			o, pion, sender := rtpOpenerPair(t, profile)
			accepted := 0
			for i, d := range rtpDeliveries(t, sender) {
				want, wantErr := pion.DecryptRTP(nil, d, nil)
				got, gotErr := o.Open(bytes.Clone(d))
				if (gotErr == nil) != (wantErr == nil) {
					t.Fatalf("delivery %d: opener %v, pion %v", i, gotErr, wantErr)
				}
				if gotErr == nil {
					accepted++
					if !bytes.Equal(got, want) {
						t.Fatalf("delivery %d: opened differently from pion", i)
					}
				}
			}
			if accepted < 100 {
				t.Fatalf("%d deliveries accepted, want the 118 distinct packets", accepted)
			}
		})
	}
}

// A stream met after its sequence number wrapped opens once told its
// rollover counter, as with pion's SetROC, and not before.
func TestRTPOpenerSetROC(t *testing.T) {
	for _, profile := range sealerProfiles {
		o, _, sender := rtpOpenerPair(t, profile)
		var last []byte
		for seq := 65530; seq < 65536+20; seq++ {
			last = protectSeq(t, sender, uint16(seq))
		}
		if _, err := o.Open(bytes.Clone(last)); err == nil && profile != srtp.ProtectionProfileAes128CmHmacSha1_80 {
			// AES-CM without the counter fails too; both refuse it.
			t.Fatalf("%s: opened a packet of rollover counter 1 guessing 0", profile)
		}
		o.SetROC(42, 1)
		if _, err := o.Open(bytes.Clone(last)); err != nil {
			t.Fatalf("%s: with SetROC(1): %v", profile, err)
		}
	}
}

func protectSeq(t testing.TB, c *srtp.Context, seq uint16) []byte {
	t.Helper()
	p := []byte{0x80, 96, byte(seq >> 8), byte(seq), 0, 0, 0, 1, 0, 0, 0, 42}
	b, err := c.EncryptRTP(nil, append(p, bytes.Repeat([]byte{0xab}, 100)...), nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRTPOpenerDoesNotAllocate(t *testing.T) {
	for _, profile := range sealerProfiles[:2] { // the AEAD profiles: AES-CM is pion's
		o, _, sender := rtpOpenerPair(t, profile)
		var sealed [][]byte
		for seq := range 600 {
			sealed = append(sealed, protectSeq(t, sender, uint16(seq)))
		}
		buf := make([]byte, 1500)
		i := 0
		allocs := testing.AllocsPerRun(500, func() {
			n := copy(buf, sealed[i])
			if _, err := o.Open(buf[:n]); err != nil {
				t.Fatal(err)
			}
			i++
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per packet", profile, allocs)
		}
	}
}

// FuzzRTPOpener: on any datagrams after a stream's real packets, the opener
// and pion's context agree on what they accept and what it opens to.
func FuzzRTPOpener(f *testing.F) {
	_, _, sender := rtpOpenerPair(f, srtp.ProtectionProfileAeadAes128Gcm)
	var seeds [][]byte
	for seq := uint16(65533); seq != 3; seq++ {
		seeds = append(seeds, protectSeq(f, sender, seq))
	}
	for _, s := range seeds {
		f.Add(s, uint16(0))
	}
	f.Add([]byte{0x90, 0x60, 0, 1, 0, 0, 0, 1, 0, 0, 0, 42, 0xbe, 0xde, 0xff, 0xff}, uint16(3))
	f.Add([]byte{0x8f, 0x60, 0, 1, 0, 0, 0, 1, 0, 0, 0, 42}, uint16(1))
	f.Fuzz(func(t *testing.T, d []byte, flip uint16) {
		o, pion, _ := rtpOpenerPair(t, srtp.ProtectionProfileAeadAes128Gcm)
		for _, s := range seeds[:3] { // a known stream state on both sides
			if _, err := pion.DecryptRTP(nil, s, nil); err != nil {
				t.Fatal(err)
			}
			if _, err := o.Open(bytes.Clone(s)); err != nil {
				t.Fatal(err)
			}
		}
		if len(d) > 0 && flip > 0 {
			d = bytes.Clone(d)
			d[int(flip)%len(d)] ^= byte(flip >> 8)
		}
		want, wantErr := pion.DecryptRTP(nil, d, nil)
		got, gotErr := o.Open(bytes.Clone(d))
		if (gotErr == nil) != (wantErr == nil) || (gotErr == nil && !bytes.Equal(got, want)) {
			t.Fatalf("opener %v, pion %v", gotErr, wantErr)
		}
	})
}

// A released stream leaves no state in the connection's opener.
func TestInboundReleaseForgetsTheStream(t *testing.T) {
	o, _, sender := rtpOpenerPair(t, srtp.ProtectionProfileAeadAes128Gcm)
	in := NewInbound()
	in.SetOpener(o)
	in.Take(42, func(time.Time, []byte, *Batch) {})
	if _, _, st := in.Open(protectSeq(t, sender, 1)); st != Opened {
		t.Fatalf("status %v, want Opened", st)
	}
	if o.find(42) < 0 {
		t.Fatal("no state for the stream after a packet opened")
	}
	in.Release(42)
	if o.find(42) >= 0 {
		t.Fatal("the opener still holds the released stream's state")
	}
}
