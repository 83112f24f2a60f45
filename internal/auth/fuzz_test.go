package auth

import (
	"errors"
	"testing"
	"time"
)

// FuzzVerify feeds Verify untrusted tokens (they arrive in join messages and admin
// requests). It must never panic, must fail with one of the package's errors, and
// whatever it accepts must have been signed by a configured key: re-signing the
// claims with that key gives a token Verify accepts with the same claims.
func FuzzVerify(f *testing.F) {
	v := verifier(f, key1, key2)
	for _, s := range []string{
		sign(f, key1, claims()),
		sign(f, key2, Claims{Room: AnyRoom, Permissions: All(), Expires: now.Add(time.Minute), NotBefore: now}),
		raw(`{"alg":"none"}`, `{"room":"r","exp":1}`, nil),
		raw(`{"alg":"HS256"}`, `{"room":"r","perms":["admin"],"exp":99999999999.5}`, &key1),
		raw(`{"alg":"HS256","kid":"k2"}`, `{"room":"r","exp":1e10}`, &key2),
		"a.b.c", "..", "",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, token string) {
		c, err := v.Verify(token, now)
		if err != nil {
			if c != nil {
				t.Fatal("claims with an error")
			}
			for _, e := range []error{ErrMalformed, ErrAlgorithm, ErrUnknownKey, ErrSignature, ErrExpired, ErrNotYetValid, ErrClaims} {
				if errors.Is(err, e) {
					return
				}
			}
			t.Fatalf("error %v wraps none of the package's errors", err)
		}
		if len(token) > MaxTokenBytes || (c.KeyID != key1.ID && c.KeyID != key2.ID) {
			t.Fatalf("accepted %q with key %q", token, c.KeyID)
		}
		k := key1
		if c.KeyID == key2.ID {
			k = key2
		}
		again, err := v.Verify(sign(t, k, *c), now)
		if err != nil {
			t.Fatalf("re-signed claims rejected: %v", err)
		}
		if again.Room != c.Room || again.Permissions != c.Permissions || again.Identity != c.Identity ||
			again.Name != c.Name || again.Expires.Unix() != c.Expires.Unix() {
			t.Fatalf("claims changed: %+v then %+v", c, again)
		}
	})
}
