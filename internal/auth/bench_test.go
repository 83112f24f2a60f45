package auth

import "testing"

// BenchmarkVerify is a join's token check: a token naming its key, verified
// against two configured keys.
func BenchmarkVerify(b *testing.B) {
	v := verifier(b, key1, key2)
	tok := sign(b, key2, claims())
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.Verify(tok, now); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifyNoKid is a token without kid: every key is tried.
func BenchmarkVerifyNoKid(b *testing.B) {
	v := verifier(b, key1, key2)
	tok := raw(`{"alg":"HS256"}`, `{"room":"r","perms":["publish"],"exp":`+itoa(now.Unix()+3600)+`}`, &key2)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.Verify(tok, now); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSign(b *testing.B) {
	c := claims()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Sign(key1, c); err != nil {
			b.Fatal(err)
		}
	}
}
