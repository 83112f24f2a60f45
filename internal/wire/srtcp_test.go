package wire

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/pion/rtcp"
	"github.com/pion/srtp/v3"
)

var sealerProfiles = []srtp.ProtectionProfile{
	srtp.ProtectionProfileAeadAes128Gcm,
	srtp.ProtectionProfileAeadAes256Gcm,
	srtp.ProtectionProfileAes128CmHmacSha1_80,
}

func sealerKeys(t testing.TB, profile srtp.ProtectionProfile) Keys {
	t.Helper()
	keyLen, err := profile.KeyLen()
	if err != nil {
		t.Fatal(err)
	}
	saltLen, err := profile.SaltLen()
	if err != nil {
		t.Fatal(err)
	}
	key, salt := make([]byte, keyLen), make([]byte, saltLen)
	for i := range key {
		key[i] = byte(3*i + 1)
	}
	for i := range salt {
		salt[i] = byte(7*i + 5)
	}
	return Keys{Profile: profile, LocalKey: key, LocalSalt: salt, RemoteKey: salt, RemoteSalt: key}
}

func compoundRTCP(t testing.TB, ssrc uint32, n int) []byte {
	t.Helper()
	b, err := rtcp.Marshal([]rtcp.Packet{
		&rtcp.SenderReport{SSRC: ssrc, NTPTime: uint64(n) << 32, RTPTime: uint32(90 * n), PacketCount: uint32(n), OctetCount: 1200},
		&rtcp.SourceDescription{Chunks: []rtcp.SourceDescriptionChunk{{Source: ssrc,
			Items: []rtcp.SourceDescriptionItem{{Type: rtcp.SDESCNAME, Text: "podium"}}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The sealer's packets are pion's, byte for byte, packet after packet (so the
// key derivation, nonce, additional data and index are RFC 7714's as pion
// reads them), and a receiver's pion context opens them.
func TestRTCPSealerMatchesPion(t *testing.T) {
	for _, profile := range sealerProfiles {
		t.Run(profile.String(), func(t *testing.T) {
			k := sealerKeys(t, profile)
			s, err := k.RTCPSealer()
			if err != nil {
				t.Fatal(err)
			}
			pion, err := k.Outbound()
			if err != nil {
				t.Fatal(err)
			}
			recv, err := srtp.CreateContext(k.LocalKey, k.LocalSalt, profile, srtp.SRTCPReplayProtection(64))
			if err != nil {
				t.Fatal(err)
			}
			slot := make([]byte, 0, SlotSize)
			for i := range 5 {
				plain := compoundRTCP(t, 0xCAFE, i)
				got, err := s.Seal(slot, plain)
				if err != nil {
					t.Fatal(err)
				}
				want, err := pion.EncryptRTCP(nil, plain, nil)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("packet %d sealed as\n%x\npion seals it as\n%x", i, got, want)
				}
				opened, err := recv.DecryptRTCP(nil, got, nil)
				if err != nil {
					t.Fatalf("packet %d: the receiver cannot open it: %v", i, err)
				}
				if !bytes.Equal(opened, plain) {
					t.Fatalf("packet %d opened as %x, want %x", i, opened, plain)
				}
			}
			if _, err := s.Seal(slot, plain7()); err == nil {
				t.Error("sealed a packet shorter than an RTCP header")
			}
		})
	}
}

func plain7() []byte { return []byte{0x80, 200, 0, 1, 0, 0, 0} }

// Sealing with an AEAD profile allocates nothing (pion's context boxes its
// additional data: one allocation per packet).
func TestRTCPSealerDoesNotAllocate(t *testing.T) {
	for _, profile := range sealerProfiles {
		t.Run(profile.String(), func(t *testing.T) {
			k := sealerKeys(t, profile)
			s, err := k.RTCPSealer()
			if err != nil {
				t.Fatal(err)
			}
			plain := compoundRTCP(t, 0xCAFE, 1)
			slot := make([]byte, 0, SlotSize)
			allocs := testing.AllocsPerRun(100, func() {
				if _, err := s.Seal(slot, plain); err != nil {
					t.Fatal(err)
				}
			})
			if allocs != 0 {
				t.Errorf("%v allocations per sealed packet, want 0", allocs)
			}
		})
	}
}

// peerOf is k as the other end holds it: what one seals the other opens.
func peerOf(k Keys) Keys {
	return Keys{Profile: k.Profile, LocalKey: k.RemoteKey, LocalSalt: k.RemoteSalt, RemoteKey: k.LocalKey, RemoteSalt: k.LocalSalt}
}

// openerPair is an opener and pion's inbound context for the same keys, and
// a pion sender to them (encrypted: with the E flag; else without it).
func openerPair(t testing.TB, profile srtp.ProtectionProfile, encrypted bool) (*RTCPOpener, *srtp.Context, *srtp.Context) {
	t.Helper()
	k := sealerKeys(t, profile)
	k.RemoteKey, k.RemoteSalt = k.LocalKey, k.LocalSalt // RemoteSalt is the key above: make them a real pair
	o, err := k.RTCPOpener()
	if err != nil {
		t.Fatal(err)
	}
	pion, err := k.Inbound()
	if err != nil {
		t.Fatal(err)
	}
	opt := srtp.SRTCPEncryption()
	if !encrypted {
		opt = srtp.SRTCPNoEncryption()
	}
	p := peerOf(k)
	sender, err := srtp.CreateContext(p.LocalKey, p.LocalSalt, profile, opt)
	if err != nil {
		t.Fatal(err)
	}
	return o, pion, sender
}

// The opener accepts exactly what pion's inbound context accepts, with the
// same bytes out: packets of two SSRCs delivered out of order, repeated,
// forged and far too late (the replay window), encrypted or not.
func TestRTCPOpenerMatchesPion(t *testing.T) {
	for _, profile := range sealerProfiles {
		for _, encrypted := range []bool{true, false} {
			t.Run(fmt.Sprint(profile, " encrypted=", encrypted), func(t *testing.T) {
				o, pion, sender := openerPair(t, profile, encrypted)
				rng := rand.New(rand.NewPCG(1, uint64(profile)))
				var sealed [][]byte
				for i := range 600 {
					b, err := sender.EncryptRTCP(nil, compoundRTCP(t, uint32(0xCAFE+i%2), i), nil)
					if err != nil {
						t.Fatal(err)
					}
					sealed = append(sealed, b)
				}
				accepted := 0
				for step := range 3000 {
					// Mostly near the newest, sometimes far behind, repeated or forged.
					i := min(step/5+rng.IntN(40), len(sealed)-1)
					if rng.IntN(10) == 0 {
						i = rng.IntN(len(sealed))
					}
					b := append([]byte(nil), sealed[i]...)
					if rng.IntN(20) == 0 {
						b[rng.IntN(len(b))] ^= 1 << rng.IntN(8)
					}
					want, wantErr := pion.DecryptRTCP(nil, append([]byte(nil), b...), nil)
					got, gotErr := o.Open(b[:0], b) // in place, as the ingress does
					if (gotErr == nil) != (wantErr == nil) {
						t.Fatalf("step %d (packet %d): opener error %v, pion's %v", step, i, gotErr, wantErr)
					}
					if gotErr == nil {
						accepted++
						if !bytes.Equal(got, want) {
							t.Fatalf("step %d: opened %x, pion %x", step, got, want)
						}
					}
				}
				if accepted < 200 || accepted == 3000 {
					t.Fatalf("%d of 3000 accepted: the test exercises too little", accepted)
				}
			})
		}
	}
}

// Opening with an AEAD profile allocates nothing (pion's context boxes the
// additional data).
func TestRTCPOpenerDoesNotAllocate(t *testing.T) {
	for _, profile := range sealerProfiles[:2] {
		t.Run(profile.String(), func(t *testing.T) {
			o, _, sender := openerPair(t, profile, true)
			var sealed [][]byte
			for i := range 102 { // the first, and AllocsPerRun's warm-up and 100 runs
				b, err := sender.EncryptRTCP(nil, compoundRTCP(t, 0xCAFE, i), nil)
				if err != nil {
					t.Fatal(err)
				}
				sealed = append(sealed, b)
			}
			if _, err := o.Open(nil, sealed[0]); err != nil { // the SSRC's window entered
				t.Fatal(err)
			}
			i := 0
			buf := make([]byte, 0, SlotSize)
			allocs := testing.AllocsPerRun(100, func() {
				i++
				if _, err := o.Open(buf, sealed[i]); err != nil {
					t.Fatal(err)
				}
			})
			if allocs != 0 {
				t.Errorf("%v allocations per opened packet, want 0", allocs)
			}
		})
	}
}

// FuzzRTCPOpener: on any bytes the opener accepts what pion accepts, with the
// same output, and nothing panics.
func FuzzRTCPOpener(f *testing.F) {
	_, _, sender := openerPair(f, srtp.ProtectionProfileAeadAes128Gcm, true)
	for i := range 3 {
		b, err := sender.EncryptRTCP(nil, compoundRTCP(f, 0xCAFE, i), nil)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{0x80, 200, 0, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		o, pion, _ := openerPair(t, srtp.ProtectionProfileAeadAes128Gcm, true)
		want, wantErr := pion.DecryptRTCP(nil, append([]byte(nil), b...), nil)
		got, gotErr := o.Open(nil, b)
		if (gotErr == nil) != (wantErr == nil) || !bytes.Equal(got, want) {
			t.Fatalf("opener %x, %v; pion %x, %v", got, gotErr, want, wantErr)
		}
	})
}
