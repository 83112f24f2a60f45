package wire

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/pion/rtp"
	"github.com/pion/srtp/v3"
)

// rtpSends is what a destination sends on two SSRCs: media across a sequence
// number wrap, retransmissions of packets sent before it, and an RTX stream,
// with extensions, CSRCs and padding in some headers.
func rtpSends(t testing.TB) [][]byte {
	rng := rand.New(rand.NewPCG(3, 5))
	var out [][]byte
	seq, rtx := uint16(65500), uint16(12)
	for i := range 120 {
		h := rtp.Header{Version: 2, PayloadType: 96, SequenceNumber: seq, Timestamp: uint32(i * 3000), SSRC: 0x11223344, Marker: i%4 == 3}
		switch {
		case i%7 == 0:
			h.CSRC = []uint32{7, 8}
		case i%5 == 0:
			h.Extension, h.ExtensionProfile = true, 0xBEDE
			if err := h.SetExtension(3, []byte{byte(i), 1}); err != nil {
				t.Fatal(err)
			}
		}
		if i == 61 || i == 92 { // resent on the media SSRC after the wrap
			h.SequenceNumber = 65530
		} else {
			seq++
		}
		if i%3 == 0 { // on the RTX SSRC
			h.SSRC, h.PayloadType, h.SequenceNumber = 0x55667788, 97, rtx
			rtx++
		}
		payload := make([]byte, 1+rng.IntN(1200))
		for j := range payload {
			payload[j] = byte(rng.Uint32())
		}
		if i%11 == 0 {
			h.Padding, h.PaddingSize = true, 4
			payload = append(payload, 0, 0, 0, 4)
		}
		b, err := h.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, append(b, payload...))
	}
	return out
}

// What the sealer protects is byte for byte what a pion context protects from
// the same packets, sealed into another buffer, in place, or after a header
// with the payload read where it is, and a pion context on the peer's side
// opens it.
func TestRTPSealerMatchesPion(t *testing.T) {
	for _, profile := range sealerProfiles {
		t.Run(profile.String(), func(t *testing.T) {
			k := sealerKeys(t, profile)
			sealer, err := k.RTPSealer()
			if err != nil {
				t.Fatal(err)
			}
			inPlace, err := k.RTPSealer()
			if err != nil {
				t.Fatal(err)
			}
			after, err := k.RTPSealer()
			if err != nil {
				t.Fatal(err)
			}
			ref, err := k.Outbound()
			if err != nil {
				t.Fatal(err)
			}
			pk := peerOf(k)
			peer, err := pk.Inbound()
			if err != nil {
				t.Fatal(err)
			}
			dst, slot := make([]byte, SlotSize), make([]byte, SlotSize)
			for i, p := range rtpSends(t) {
				var h rtp.Header
				hl, err := h.Unmarshal(p)
				if err != nil {
					t.Fatal(err)
				}
				got, err := sealer.Seal(dst, p, hl)
				if err != nil {
					t.Fatalf("packet %d: %v", i, err)
				}
				want, err := ref.EncryptRTP(nil, p, nil)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("packet %d (SSRC %x seq %d): sealed differently from pion", i, h.SSRC, h.SequenceNumber)
				}
				n := copy(slot, p)
				if got, err := inPlace.Seal(slot[:0], slot[:n], hl); err != nil || !bytes.Equal(got, want) {
					t.Fatalf("packet %d (SSRC %x seq %d): sealed in place differently from pion (%v)", i, h.SSRC, h.SequenceNumber, err)
				}
				n = copy(slot, p[:hl])
				if got, err := after.SealAfter(slot[:n], p[hl:]); err != nil || !bytes.Equal(got, want) {
					t.Fatalf("packet %d (SSRC %x seq %d): sealed after its header differently from pion (%v)", i, h.SSRC, h.SequenceNumber, err)
				}
				if h.SequenceNumber == 65530 && i > 0 {
					continue // a repeat: the peer's replay window refuses it, rightly
				}
				opened, err := peer.DecryptRTP(nil, got, nil)
				if err != nil || !bytes.Equal(opened, p) {
					t.Fatalf("packet %d (SSRC %x seq %d): the peer cannot open it: %v", i, h.SSRC, h.SequenceNumber, err)
				}
			}
		})
	}
}

// profileSealer is an RTP sealer of sealerKeys for profile.
func profileSealer(t testing.TB, profile srtp.ProtectionProfile) *RTPSealer {
	t.Helper()
	k := sealerKeys(t, profile)
	s, err := k.RTPSealer()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRTPSealerDoesNotAllocate(t *testing.T) {
	for _, profile := range sealerProfiles {
		s := profileSealer(t, profile)
		sends := rtpSends(t)
		dst := make([]byte, SlotSize)
		hl := make([]int, len(sends))
		for i, p := range sends {
			var h rtp.Header
			hl[i], _ = h.Unmarshal(p)
		}
		i := 0
		allocs := testing.AllocsPerRun(500, func() {
			if _, err := s.Seal(dst, sends[i%len(sends)], hl[i%len(sends)]); err != nil {
				t.Fatal(err)
			}
			i++
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per packet", profile, allocs)
		}
	}
}

func TestRTPSealerRefusesAPacketShorterThanItsHeader(t *testing.T) {
	k := sealerKeys(t, srtp.ProtectionProfileAeadAes128Gcm)
	s, err := k.RTPSealer()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Seal(make([]byte, SlotSize), make([]byte, 10), 12); err == nil {
		t.Fatal("sealed a 10-byte packet with a 12-byte header")
	}
}

// The sealers of a connection's tracks (keys held by a Route) share one
// session AEAD, seal from goroutines of their own at once (the race detector
// watches), and still protect each packet as a pion context does.
func TestSealersOfARouteShareTheSessionAEAD(t *testing.T) {
	for _, profile := range sealerProfiles {
		t.Run(profile.String(), func(t *testing.T) {
			var r Route
			r.SetKeys(sealerKeys(t, profile))
			k := r.keys.Load()
			media, err := k.RTPSealer()
			if err != nil {
				t.Fatal(err)
			}
			rtx, err := k.RTPSealer()
			if err != nil {
				t.Fatal(err)
			}
			aeadProfile := profile == srtp.ProtectionProfileAeadAes128Gcm || profile == srtp.ProtectionProfileAeadAes256Gcm
			if shared := media.aead != nil && media.aead == rtx.aead; shared != aeadProfile {
				t.Fatalf("session AEAD shared: %v, want %v (an AEAD profile)", shared, aeadProfile)
			}
			sends := rtpSends(t)
			got := make([][]byte, len(sends))
			var wg sync.WaitGroup
			for _, s := range []struct {
				sealer *RTPSealer
				ssrc   uint32
			}{{media, 0x11223344}, {rtx, 0x55667788}} {
				wg.Go(func() {
					for i, p := range sends {
						if binary.BigEndian.Uint32(p[8:]) != s.ssrc {
							continue
						}
						var h rtp.Header
						hl, err := h.Unmarshal(p)
						if err != nil {
							t.Error(err)
							return
						}
						if got[i], err = s.sealer.Seal(make([]byte, SlotSize), p, hl); err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			ref, err := k.Outbound()
			if err != nil {
				t.Fatal(err)
			}
			for i, p := range sends {
				want, err := ref.EncryptRTP(nil, p, nil)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got[i], want) {
					t.Fatalf("packet %d (SSRC %x): sealed differently from pion", i, binary.BigEndian.Uint32(p[8:]))
				}
			}
		})
	}
}
