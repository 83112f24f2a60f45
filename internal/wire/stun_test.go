package wire

import (
	"bytes"
	"net"
	"net/netip"
	"testing"

	"github.com/pion/stun/v4"
)

const (
	testLocalPwd  = "local-password-of-24chars"
	testRemotePwd = "remote-password-24-chars"
)

// pionRequest is a binding request as pion's ICE agent builds its checks.
func pionRequest(t testing.TB, extra ...stun.Setter) *stun.Message {
	t.Helper()
	setters := []stun.Setter{stun.BindingRequest, stun.TransactionID, stun.NewUsername("lcl:rmt")}
	setters = append(setters, extra...)
	setters = append(setters, stun.NewShortTermIntegrity(testLocalPwd), stun.Fingerprint)
	m, err := stun.Build(setters...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestParseSTUNReadsPionsChecks(t *testing.T) {
	m := pionRequest(t, stun.RawAttribute{Type: attrICEControlling, Value: make([]byte, 8)},
		stun.RawAttribute{Type: attrUseCandidate})
	got, err := ParseSTUN(m.Raw)
	if err != nil {
		t.Fatal(err)
	}
	if got.Type != STUNBindingRequest || !bytes.Equal(got.TxID, m.TransactionID[:]) || string(got.Username) != "lcl:rmt" ||
		!got.Controlling || got.Controlled || !got.UseCandidate {
		t.Fatalf("parsed %+v", got)
	}
	if !got.Authentic(m.Raw, NewSTUNKey(testLocalPwd)) {
		t.Fatal("pion's integrity and fingerprint not accepted")
	}
	if got.Authentic(m.Raw, NewSTUNKey(testRemotePwd)) {
		t.Fatal("accepted with the wrong password")
	}
	for i := STUNHeaderLen; i < len(m.Raw); i++ { // any flipped bit is refused
		b := bytes.Clone(m.Raw)
		b[i] ^= 0x10
		if p, err := ParseSTUN(b); err == nil && p.Authentic(b, NewSTUNKey(testLocalPwd)) {
			t.Fatalf("byte %d flipped: still authentic", i)
		}
	}
	noFingerprint, err := stun.Build(stun.BindingRequest, stun.TransactionID, stun.NewUsername("lcl:rmt"), stun.NewShortTermIntegrity(testLocalPwd))
	if err != nil {
		t.Fatal(err)
	}
	if p, err := ParseSTUN(noFingerprint.Raw); err != nil || p.Authentic(noFingerprint.Raw, NewSTUNKey(testLocalPwd)) {
		t.Fatalf("a check without FINGERPRINT: %v, accepted", err)
	}
}

func TestParseSTUNRefusesMalformed(t *testing.T) {
	good := pionRequest(t).Raw
	cases := map[string][]byte{
		"short":           good[:19],
		"no cookie":       append(append([]byte{}, good[:4]...), append([]byte{1, 2, 3, 4}, good[8:]...)...),
		"length too long": func() []byte { b := bytes.Clone(good); b[3] += 4; return b }(),
		"length not x4":   func() []byte { b := bytes.Clone(good[:len(good)-2]); b[3] -= 2; return b }(),
		"attribute past end": func() []byte {
			b := bytes.Clone(good)
			b[STUNHeaderLen+3] = 200 // USERNAME's length
			return b
		}(),
		"after fingerprint": func() []byte {
			b := append(bytes.Clone(good), 0, 0x24, 0, 0) // an empty attribute after FINGERPRINT
			b[3] += 4
			return b
		}(),
		"RTP": {0x80, 0x60, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0},
	}
	for name, b := range cases {
		if _, err := ParseSTUN(b); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
}

func TestBindingSuccessReadByPion(t *testing.T) {
	req := pionRequest(t)
	for _, mapped := range []netip.AddrPort{netip.MustParseAddrPort("192.0.2.7:40000"), netip.MustParseAddrPort("[2001:db8::5]:5004")} {
		b := AppendBindingSuccess([]byte("junk"), req.TransactionID[:], mapped, NewSTUNKey(testLocalPwd))
		if string(b[:4]) != "junk" {
			t.Fatal("dst overwritten")
		}
		m := &stun.Message{Raw: bytes.Clone(b[4:])}
		if err := m.Decode(); err != nil {
			t.Fatal(err)
		}
		if m.Type != stun.BindingSuccess || m.TransactionID != req.TransactionID {
			t.Fatalf("type %v, transaction %x", m.Type, m.TransactionID)
		}
		if err := stun.NewShortTermIntegrity(testLocalPwd).Check(m); err != nil {
			t.Fatal("integrity:", err)
		}
		if err := stun.Fingerprint.Check(m); err != nil {
			t.Fatal("fingerprint:", err)
		}
		var xor stun.XORMappedAddress
		if err := xor.GetFrom(m); err != nil {
			t.Fatal(err)
		}
		if got := (&net.UDPAddr{IP: xor.IP, Port: xor.Port}).AddrPort(); got.Addr().Unmap() != mapped.Addr() || got.Port() != mapped.Port() {
			t.Fatalf("mapped %v, want %v", got, mapped)
		}
		// and our parser reads what we build
		p, err := ParseSTUN(b[4:])
		if err != nil || !p.Authentic(b[4:], NewSTUNKey(testLocalPwd)) {
			t.Fatalf("own answer: %v", err)
		}
	}
}

func TestBindingRequestReadByPion(t *testing.T) {
	tx := []byte("0123456789ab")
	for _, controlling := range []bool{true, false} {
		for _, user := range []string{"rmt:lcl", "rmtu:lcl", "a:b"} { // every padding
			b := AppendBindingRequest(nil, tx, user, 0x6e7fff, controlling, 0x1122334455667788, NewSTUNKey(testRemotePwd))
			m := &stun.Message{Raw: b}
			if err := m.Decode(); err != nil {
				t.Fatal(err)
			}
			var u stun.Username
			if err := u.GetFrom(m); err != nil || u.String() != user {
				t.Fatalf("username %q, %v", u, err)
			}
			if err := stun.NewShortTermIntegrity(testRemotePwd).Check(m); err != nil {
				t.Fatal("integrity:", err)
			}
			if err := stun.Fingerprint.Check(m); err != nil {
				t.Fatal("fingerprint:", err)
			}
			role := stun.AttrType(attrICEControlled)
			if controlling {
				role = attrICEControlling
			}
			if v, err := m.Get(role); err != nil || len(v) != 8 {
				t.Fatalf("role attribute: %v", err)
			}
			if v, err := m.Get(attrPriority); err != nil || len(v) != 4 || v[3] != 0xff {
				t.Fatalf("priority: %x %v", v, err)
			}
			p, err := ParseSTUN(b)
			if err != nil || p.Controlling != controlling || p.Controlled == controlling || !p.Authentic(b, NewSTUNKey(testRemotePwd)) {
				t.Fatalf("own request: %+v %v", p, err)
			}
		}
	}
}

func TestBindingIndicationDecodedByPion(t *testing.T) {
	b := AppendBindingIndication(nil, []byte("0123456789ab"))
	m := &stun.Message{Raw: b}
	if err := m.Decode(); err != nil || m.Type != (stun.MessageType{Method: stun.MethodBinding, Class: stun.ClassIndication}) {
		t.Fatalf("%v %v", m.Type, err)
	}
	if len(b) != STUNHeaderLen || !IsSTUN(b) {
		t.Fatal("not a bare header")
	}
}

func TestSTUNDoesNotAllocate(t *testing.T) {
	req := pionRequest(t, stun.RawAttribute{Type: attrICEControlled, Value: make([]byte, 8)}).Raw
	local, remote := NewSTUNKey(testLocalPwd), NewSTUNKey(testRemotePwd)
	out := make([]byte, 0, SlotSize)
	peer := netip.MustParseAddrPort("192.0.2.7:40000")
	allocs := testing.AllocsPerRun(200, func() {
		m, err := ParseSTUN(req)
		if err != nil || !m.Authentic(req, local) {
			t.Fatal("refused")
		}
		out = AppendBindingSuccess(out[:0], m.TxID, peer, local)
		out = AppendBindingRequest(out[:0], m.TxID, "rmt:lcl", 1, true, 2, remote)
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per answered check and sent check", allocs)
	}
}

// FuzzParseSTUN: any datagram parses without panicking, and one that parses
// and is authentic is one pion decodes and finds authentic too.
func FuzzParseSTUN(f *testing.F) {
	f.Add(pionRequest(f).Raw)
	f.Add(AppendBindingSuccess(nil, make([]byte, 12), netip.MustParseAddrPort("[::1]:9"), NewSTUNKey(testLocalPwd)))
	f.Add(AppendBindingIndication(nil, make([]byte, 12)))
	key := NewSTUNKey(testLocalPwd)
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseSTUN(b)
		if err != nil || !m.Authentic(b, key) {
			return
		}
		pm := &stun.Message{Raw: bytes.Clone(b)}
		if err := pm.Decode(); err != nil {
			t.Fatalf("authentic to us, pion cannot decode: %v", err)
		}
		if err := stun.NewShortTermIntegrity(testLocalPwd).Check(pm); err != nil {
			t.Fatalf("authentic to us, not to pion: %v", err)
		}
	})
}
