package auth

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"
)

// The e2ee claim survives signing and verification, and is absent (false)
// from tokens without it; the payload names it only when set.
func TestE2EEClaim(t *testing.T) {
	key := Key{ID: "k", Secret: []byte(strings.Repeat("s", MinSecretBytes))}
	v, err := NewVerifier([]Key{key})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	for _, want := range []bool{true, false} {
		tok, err := Sign(key, Claims{Room: "r", E2EE: want, Expires: now.Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		c, err := v.Verify(tok, now)
		if err != nil {
			t.Fatal(err)
		}
		if c.E2EE != want {
			t.Errorf("e2ee %v signed, %v verified", want, c.E2EE)
		}
		raw, err := base64.RawURLEncoding.DecodeString(strings.Split(tok, ".")[1])
		if err != nil {
			t.Fatal(err)
		}
		if named := strings.Contains(string(raw), `"e2ee":true`); named != want {
			t.Errorf("payload %s: e2ee named %v, want %v", raw, named, want)
		}
	}
}
