package auth

import (
	"errors"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// TestOnlyHS256 signs tokens properly with the library's other methods, under a
// configured key's kid: only the parser's method list can refuse them.
func TestOnlyHS256(t *testing.T) {
	v := verifier(t, key1)
	for _, m := range []jwt.SigningMethod{jwt.SigningMethodHS384, jwt.SigningMethodHS512, jwt.SigningMethodNone} {
		tok := jwt.NewWithClaims(m, &payload{Room: "r", Perms: []string{PermAdmin}, Exp: optional(now.Add(time.Hour))})
		tok.Header["kid"] = key1.ID
		var secret any = key1.Secret
		if m == jwt.SigningMethodNone {
			secret = jwt.UnsafeAllowNoneSignatureType
		}
		s, err := tok.SignedString(secret)
		if err != nil {
			t.Fatal(err)
		}
		if c, err := v.Verify(s, now); !errors.Is(err, ErrAlgorithm) {
			t.Errorf("%s: %+v, %v; want %v", m.Alg(), c, err, ErrAlgorithm)
		}
	}
}
