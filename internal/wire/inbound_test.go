package wire

import (
	"bytes"
	"testing"
	"time"

	"github.com/pion/rtp"
	"github.com/pion/srtp/v3"
)

func inboundPair(t *testing.T, profile srtp.ProtectionProfile) (sender *srtp.Context, in *Inbound, got *[]uint16) {
	t.Helper()
	key, salt := bytes.Repeat([]byte{7}, 16), bytes.Repeat([]byte{9}, 14)
	if profile != srtp.ProtectionProfileAes128CmHmacSha1_80 {
		salt = salt[:12]
	}
	sender, err := srtp.CreateContext(key, salt, profile)
	if err != nil {
		t.Fatal(err)
	}
	k := Keys{Profile: profile, RemoteKey: key, RemoteSalt: salt, LocalKey: key, LocalSalt: salt}
	o, err := k.RTPOpener()
	if err != nil {
		t.Fatal(err)
	}
	in = NewInbound()
	in.SetOpener(o)
	seqs := []uint16{}
	got = &seqs
	in.Take(42, func(_ time.Time, b []byte, _ *Batch) {
		var h rtp.Header
		if _, err := h.Unmarshal(b); err != nil {
			t.Fatal(err)
		}
		*got = append(*got, h.SequenceNumber)
	})
	return sender, in, got
}

func protect(t *testing.T, c *srtp.Context, seq uint16) []byte {
	t.Helper()
	b, err := (&rtp.Packet{Header: rtp.Header{Version: 2, PayloadType: 96, SequenceNumber: seq, SSRC: 42},
		Payload: bytes.Repeat([]byte{0xab}, 200)}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.EncryptRTP(nil, b, nil)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestInboundTakesAStreamThatWrappedBeforeIt: pion's context read a stream's
// first packets, across its sequence number's wrap; ours, meeting it after,
// must still open it (rollover counter 1), and a forged packet first must not
// keep it from doing so.
func TestInboundTakesAStreamThatWrappedBeforeIt(t *testing.T) {
	for _, profile := range []srtp.ProtectionProfile{srtp.ProtectionProfileAeadAes128Gcm, srtp.ProtectionProfileAes128CmHmacSha1_80} {
		sender, in, got := inboundPair(t, profile)
		for seq := uint16(65530); seq != 3; seq++ {
			protect(t, sender, seq) // read by pion
		}
		forged := protect(t, sender, 3)
		forged[len(forged)-1] ^= 1
		if _, _, st := in.Open(forged); st != Refused {
			t.Fatalf("%v: a forged packet: %v, want refused", profile, st)
		}
		for seq := uint16(3); seq < 6; seq++ {
			b, h, st := in.Open(protect(t, sender, seq))
			if st != Opened {
				t.Fatalf("%v: packet %d after the wrap: %v, want opened", profile, seq, st)
			}
			h(time.Now(), b, nil)
		}
		if len(*got) != 3 || (*got)[0] != 3 {
			t.Fatalf("%v: handled %v, want 3 4 5", profile, *got)
		}
	}
}

// TestInboundTakesAStreamMidway: the usual case, no wrap; an untaken SSRC
// and anything but RTP are left alone, untouched.
func TestInboundTakesAStreamMidway(t *testing.T) {
	sender, in, got := inboundPair(t, srtp.ProtectionProfileAeadAes128Gcm)
	for seq := uint16(1000); seq < 1010; seq++ {
		protect(t, sender, seq)
	}
	for seq := uint16(1010); seq < 1013; seq++ {
		b, h, st := in.Open(protect(t, sender, seq))
		if st != Opened {
			t.Fatalf("packet %d: %v", seq, st)
		}
		h(time.Now(), b, nil)
	}
	if len(*got) != 3 {
		t.Fatalf("handled %v", *got)
	}
	other := protect(t, sender, 7)
	other[11] = 43 // another SSRC
	orig := append([]byte(nil), other...)
	if _, _, st := in.Open(other); st != NotTaken || !bytes.Equal(other, orig) {
		t.Fatalf("an untaken SSRC: %v, modified %v", st, !bytes.Equal(other, orig))
	}
	if in.Taken.Load() != 3 || in.Rejected.Load() != 0 {
		t.Fatalf("taken %d rejected %d", in.Taken.Load(), in.Rejected.Load())
	}
}

// FuzzInboundOpen: whatever arrives, Open either leaves it untouched (not a
// taken stream's), refuses it or opens an authentic packet; nothing panics.
func FuzzInboundOpen(f *testing.F) {
	key, salt := bytes.Repeat([]byte{7}, 16), bytes.Repeat([]byte{9}, 12)
	sender, _ := srtp.CreateContext(key, salt, srtp.ProtectionProfileAeadAes128Gcm)
	b, _ := (&rtp.Packet{Header: rtp.Header{Version: 2, PayloadType: 96, SequenceNumber: 9, SSRC: 42}, Payload: []byte{1, 2, 3}}).Marshal()
	good, _ := sender.EncryptRTP(nil, b, nil)
	f.Add(good)
	f.Add(b)
	f.Add([]byte{0x80, 0xc8, 0, 6, 0, 0, 0, 42})
	f.Add([]byte{0x90, 0x60, 0, 1, 0, 0, 0, 1, 0, 0, 0, 42, 0xbe, 0xde, 0xff, 0xff})
	k := Keys{Profile: srtp.ProtectionProfileAeadAes128Gcm, RemoteKey: key, RemoteSalt: salt}
	f.Fuzz(func(t *testing.T, d []byte) {
		o, err := k.RTPOpener()
		if err != nil {
			t.Fatal(err)
		}
		in := NewInbound()
		in.SetOpener(o)
		in.Take(42, func(time.Time, []byte, *Batch) {})
		orig := append([]byte(nil), d...)
		plain, h, st := in.Open(d)
		switch st {
		case NotTaken:
			if !bytes.Equal(d, orig) {
				t.Fatal("a datagram left to pion was modified")
			}
		case Opened:
			if h == nil || len(plain) >= len(orig) {
				t.Fatalf("opened %d bytes of %d", len(plain), len(orig))
			}
		}
	})
}
