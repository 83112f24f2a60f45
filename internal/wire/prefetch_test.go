package wire

import (
	"reflect"
	"testing"

	"github.com/pion/srtp/v3"
)

// TestAEADLayoutIsWhatPrefetchAssumes: PrefetchAEAD asks for the first 3 and
// the last 5 of 12 cache lines of Go's AES-GCM, where its encryption keys and
// GHASH table lie. A Go release that moves them fails here (the hint would
// then ask for the wrong lines: slower, never wrong).
func TestAEADLayoutIsWhatPrefetchAssumes(t *testing.T) {
	key, salt := make([]byte, 16), make([]byte, 12)
	aead, _, err := sessionAEAD(srtp.ProtectionProfileAeadAes128Gcm, labelSRTPKey, labelSRTPSalt, key, salt)
	if err != nil {
		t.Fatal(err)
	}
	typ := reflect.TypeOf(aead)
	if typ.Kind() != reflect.Pointer || typ.Elem().Kind() != reflect.Struct {
		t.Fatalf("the AEAD is a %v, not a pointer to a struct", typ)
	}
	g := typ.Elem()
	if g.String() != "gcm.GCM" || g.Size() > 12*64 {
		t.Fatalf("the AEAD is a %s of %d bytes, not a gcm.GCM within 12 lines", g, g.Size())
	}
	// offset of a field, promoted ones included, from the start of s.
	offset := func(s reflect.Type, name string) (uintptr, reflect.Type) {
		f, ok := s.FieldByName(name)
		if !ok {
			t.Fatalf("%s has no field %s", s, name)
		}
		var at uintptr
		for i := range f.Index {
			at += s.FieldByIndex(f.Index[:i+1]).Offset
		}
		return at, f.Type
	}
	block, blockType := offset(g, "cipher")
	enc, _ := offset(blockType, "enc")
	if end := block + enc + 11*16; end > 3*64 {
		t.Errorf("AES-128's round keys end at byte %d, past the first 3 lines", end)
	}
	at, table := offset(g, "productTable")
	if at < 7*64 || at+table.Size() > 12*64 {
		t.Errorf("the GHASH table is at bytes %d–%d, not within lines 7–11", at, at+table.Size())
	}
}

// TestPrefetchAEADOnEveryProfile: the hint reads a GCM sealer's AEAD through
// the interface's data word and skips an AES-CM sealer's (none), without a
// fault or an allocation.
func TestPrefetchAEADOnEveryProfile(t *testing.T) {
	for _, profile := range sealerProfiles {
		s := profileSealer(t, profile)
		if n := testing.AllocsPerRun(100, s.PrefetchAEAD); n != 0 {
			t.Errorf("%v: PrefetchAEAD allocates %.1f times", profile, n)
		}
	}
}
