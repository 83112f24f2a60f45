package relay

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	good := make([]byte, Overhead)
	putHeader(good, &Header{Kind: KindMedia, Sender: 0x01020304, KeyID: 0x0a0b0c0d, Counter: 0x1122334455667788})
	with := func(i int, v byte) []byte { b := bytes.Clone(good); b[i] = v; return b }
	cases := []struct {
		name string
		b    []byte
		err  error
	}{
		{"ok", good, nil},
		{"empty", nil, ErrShort},
		{"header only", good[:HeaderLen], ErrShort},
		{"one byte short", good[:Overhead-1], ErrShort},
		{"too long", make([]byte, MaxDatagram+1), ErrLong},
		{"version 0", with(0, 0), ErrVersion},
		{"version 2", with(0, 2), ErrVersion},
		{"kind 0", with(1, 0), ErrKind},
		{"kind 5", with(1, 5), ErrKind},
		{"probe", with(1, byte(KindProbe)), nil},
		{"report", with(1, byte(KindReport)), nil},
		{"feedback", with(1, byte(KindFeedback)), nil},
	}
	for _, c := range cases {
		var h Header
		err := Parse(c.b, &h)
		if !errors.Is(err, c.err) {
			t.Errorf("%s: err %v, want %v", c.name, err, c.err)
		}
		if c.name == "ok" && h != (Header{Kind: KindMedia, Sender: 0x01020304, KeyID: 0x0a0b0c0d, Counter: 0x1122334455667788}) {
			t.Errorf("ok: parsed %+v", h)
		}
	}
}

func TestParseFeedback(t *testing.T) {
	cases := []struct {
		name string
		b    []byte
		ok   bool
		typ  byte
		n    int
	}{
		{"keyframe", AppendKeyframeRequest(nil), true, FeedbackKeyframe, 0},
		{"nack", AppendNACK(nil, []NACKPair{{1, 0}, {100, 0x8001}}), true, FeedbackNACK, 2},
		{"empty", nil, false, 0, 0},
		{"keyframe with bytes", []byte{FeedbackKeyframe, 0}, false, 0, 0},
		{"nack without pairs", []byte{FeedbackNACK}, false, 0, 0},
		{"nack half pair", []byte{FeedbackNACK, 0, 1}, false, 0, 0},
		{"nack too many", append([]byte{FeedbackNACK}, make([]byte, 4*(MaxNACKPairs+1))...), false, 0, 0},
		{"unknown type", []byte{9}, false, 0, 0},
	}
	for _, c := range cases {
		var f Feedback
		err := ParseFeedback(c.b, &f)
		if (err == nil) != c.ok {
			t.Errorf("%s: err %v", c.name, err)
			continue
		}
		if c.ok && (f.Type != c.typ || len(f.NACKs) != c.n) {
			t.Errorf("%s: %+v", c.name, f)
		}
	}
	var lost []uint16
	NACKPair{First: 65535, Mask: 0x8001}.Lost(func(s uint16) { lost = append(lost, s) })
	if want := []uint16{65535, 0, 15}; !equal(lost, want) {
		t.Errorf("lost %v, want %v", lost, want)
	}
}

func equal(a, b []uint16) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// FuzzOpen feeds arbitrary bytes to the receiving side as the socket does: a
// datagram that was not sealed under a known key must never be accepted, and
// nothing may panic. The seeds (testdata/fuzz/FuzzOpen) include datagrams
// sealed under the fuzz key: mutations of them must fail to open.
func FuzzOpen(f *testing.F) {
	f.Add([]byte{})
	f.Add(make([]byte, Overhead))
	f.Fuzz(func(t *testing.T, b []byte) {
		now := time.Unix(1000, 0)
		ring, peers := fuzzPair(now)
		var h Header
		perr := Parse(b, &h)
		stream, body, drop := peers.Open(now, bytes.Clone(b), &h)
		if perr != nil && drop != Malformed {
			t.Fatalf("parse failed (%v) but drop %v", perr, drop)
		}
		if drop == Accepted {
			// Only what the key's holder seals opens: sealing the
			// opened content again at that counter gives b exactly.
			k := ring.active.Load()
			k.counter.Store(h.Counter - 1)
			again := k.seal(make([]byte, MaxDatagram), ring.sender, h.Kind, stream, body)
			if !bytes.Equal(again, b) {
				t.Fatalf("accepted %x, which the key's holder would seal as %x", b, again)
			}
		}
		var fb Feedback
		_ = ParseFeedback(b, &fb)
		if len(fb.NACKs) > MaxNACKPairs {
			t.Fatalf("%d NACK pairs", len(fb.NACKs))
		}
	})
}

// fuzzPair is a sender with a fixed key and a receiver that knows it, so
// that the corpus can hold datagrams sealed under that key.
func fuzzPair(now time.Time) (*Keyring, *Peers) {
	raw := []byte("0123456789abcdef")
	aead, _ := newAEAD(raw)
	ring := &Keyring{sender: 0x50444d31}
	ring.active.Store(&sendKey{Key: Key{ID: 1, Raw: raw}, aead: aead})
	peers := NewPeers(time.Minute)
	peers.Learn(now, "fuzz", ring.sender, []Key{{ID: 1, Raw: raw}})
	return ring, peers
}
