package auth

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

var (
	now  = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	key1 = Key{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")}
	key2 = Key{ID: "k2", Secret: []byte("fedcba9876543210fedcba9876543210")}
)

func verifier(t testing.TB, keys ...Key) *Verifier {
	t.Helper()
	v, err := NewVerifier(keys)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func claims() Claims {
	return Claims{Room: "standup", Identity: "alice", Name: "Alice",
		Permissions: Permissions{Publish: true, Subscribe: true},
		IssuedAt:    now.Add(-time.Minute), Expires: now.Add(time.Hour)}
}

func sign(t testing.TB, k Key, c Claims) string {
	t.Helper()
	tok, err := Sign(k, c)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// raw builds a token from literal header and payload JSON, signed with k (nil: the
// signature is garbage of the right length).
func raw(header, payload string, k *Key) string {
	signed := base64.RawURLEncoding.EncodeToString([]byte(header)) + "." + base64.RawURLEncoding.EncodeToString([]byte(payload))
	sig := make([]byte, 32)
	if k != nil {
		m := hmac.New(sha256.New, k.Secret)
		m.Write([]byte(signed))
		sig = m.Sum(nil)
	}
	return signed + "." + base64.RawURLEncoding.EncodeToString(sig)
}

func TestSignVerifyRoundTrip(t *testing.T) {
	v := verifier(t, key1)
	tok := sign(t, key1, claims())
	got, err := v.Verify(tok, now)
	if err != nil {
		t.Fatal(err)
	}
	want := claims()
	want.IssuedAt = want.IssuedAt.Truncate(time.Second)
	want.KeyID = "k1"
	if *got != want {
		t.Errorf("claims %+v, want %+v", *got, want)
	}
	if !got.AllowsRoom("standup") || got.AllowsRoom("other") {
		t.Error("room check")
	}
}

func TestVerifyRejects(t *testing.T) {
	v := verifier(t, key1, key2)
	valid := sign(t, key1, claims())
	parts := strings.Split(valid, ".")
	expPayload := `{"room":"standup","perms":["publish"],"exp":` + itoa(now.Add(time.Hour).Unix()) + `}`
	tests := []struct {
		name  string
		token string
		want  error
	}{
		{"empty", "", ErrMalformed},
		{"one part", "abc", ErrMalformed},
		{"four parts", valid + ".x", ErrMalformed},
		{"header not base64url", "!!!." + parts[1] + "." + parts[2], ErrMalformed},
		{"padded base64", parts[0] + "=." + parts[1] + "." + parts[2], ErrMalformed},
		{"header not JSON", raw("nope", expPayload, &key1), ErrMalformed},
		{"header JSON array", raw(`["HS256"]`, expPayload, &key1), ErrMalformed},
		{"header trailing data", raw(`{"alg":"HS256"} x`, expPayload, &key1), ErrMalformed},
		{"alg none", raw(`{"alg":"none","typ":"JWT"}`, expPayload, nil), ErrAlgorithm},
		{"alg none without signature", strings.TrimSuffix(raw(`{"alg":"none"}`, expPayload, nil), parts[2]), ErrAlgorithm},
		{"alg missing", raw(`{"typ":"JWT"}`, expPayload, &key1), ErrAlgorithm},
		{"alg HS512", raw(`{"alg":"HS512"}`, expPayload, &key1), ErrAlgorithm},
		{"alg RS256", raw(`{"alg":"RS256"}`, expPayload, &key1), ErrAlgorithm},
		{"alg lower case", raw(`{"alg":"hs256"}`, expPayload, &key1), ErrAlgorithm},
		{"duplicate alg", raw(`{"alg":"none","alg":"HS256"}`, expPayload, &key1), ErrMalformed},
		{"typ not JWT", raw(`{"alg":"HS256","typ":"JOSE+JSON"}`, expPayload, &key1), ErrMalformed},
		{"crit header", raw(`{"alg":"HS256","crit":["exp"]}`, expPayload, &key1), ErrMalformed},
		{"short signature", parts[0] + "." + parts[1] + ".AAAA", ErrMalformed},
		{"forged: signed with another secret", sign(t, Key{ID: "k1", Secret: []byte("an attacker's secret, 32+ bytes long")}, claims()), ErrSignature},
		{"forged: no kid, no key matches", raw(`{"alg":"HS256"}`, expPayload, &Key{Secret: []byte("an attacker's secret, 32+ bytes long")}), ErrSignature},
		{"kid names another key", raw(`{"alg":"HS256","kid":"k2"}`, expPayload, &key1), ErrSignature},
		{"unknown kid", raw(`{"alg":"HS256","kid":"k9"}`, expPayload, &key1), ErrUnknownKey},
		{"payload tampered", parts[0] + "." + base64.RawURLEncoding.EncodeToString([]byte(`{"room":"*","perms":["admin"],"exp":9999999999}`)) + "." + parts[2], ErrSignature},
		{"signature of another token", parts[0] + "." + parts[1] + "." + strings.Split(sign(t, key1, Claims{Room: "x", Expires: now.Add(time.Hour)}), ".")[2], ErrSignature},
		{"expired", sign(t, key1, Claims{Room: "standup", Expires: now.Add(-Leeway - time.Second)}), ErrExpired},
		{"not yet valid", sign(t, key1, Claims{Room: "standup", NotBefore: now.Add(Leeway + time.Second), Expires: now.Add(time.Hour)}), ErrNotYetValid},
		{"no exp", raw(`{"alg":"HS256"}`, `{"room":"standup","perms":[]}`, &key1), ErrClaims},
		{"exp as string", raw(`{"alg":"HS256"}`, `{"room":"standup","exp":"9999999999"}`, &key1), ErrClaims},
		{"exp null", raw(`{"alg":"HS256"}`, `{"room":"standup","exp":null}`, &key1), ErrClaims},
		{"exp beyond year 9999", raw(`{"alg":"HS256"}`, `{"room":"standup","exp":1e300}`, &key1), ErrClaims},
		{"no room", raw(`{"alg":"HS256"}`, `{"exp":9999999999}`, &key1), ErrClaims},
		{"bad room", raw(`{"alg":"HS256"}`, `{"room":"../x","exp":9999999999}`, &key1), ErrClaims},
		{"unknown permission", raw(`{"alg":"HS256"}`, `{"room":"r","perms":["root"],"exp":9999999999}`, &key1), ErrClaims},
		{"perms not a list", raw(`{"alg":"HS256"}`, `{"room":"r","perms":"admin","exp":9999999999}`, &key1), ErrClaims},
		{"duplicate room claim", raw(`{"alg":"HS256"}`, `{"room":"a","room":"b","exp":9999999999}`, &key1), ErrClaims},
		{"payload not an object", raw(`{"alg":"HS256"}`, `[1]`, &key1), ErrClaims},
		{"too long", strings.Repeat("a", MaxTokenBytes+1), ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := v.Verify(tt.token, now)
			if !errors.Is(err, tt.want) {
				t.Errorf("Verify = %+v, %v; want %v", c, err, tt.want)
			}
			if c != nil {
				t.Errorf("claims returned with an error: %+v", c)
			}
		})
	}
}

func TestVerifyClockSkew(t *testing.T) {
	v := verifier(t, key1)
	c := claims()
	c.Expires = now.Add(-Leeway + time.Second) // expired, but within the leeway
	c.NotBefore = now.Add(Leeway - time.Second)
	if _, err := v.Verify(sign(t, key1, c), now); err != nil {
		t.Errorf("within leeway: %v", err)
	}
	if _, err := v.Verify(sign(t, key1, c), now.Add(2*Leeway)); !errors.Is(err, ErrExpired) {
		t.Errorf("a minute later: %v, want expired", err)
	}
	// Fractional NumericDate values are allowed.
	tok := raw(`{"alg":"HS256"}`, `{"room":"r","exp":`+itoa(now.Unix())+`.5}`, &key1)
	if got, err := v.Verify(tok, now); err != nil || got.Expires.Nanosecond() != 5e8 {
		t.Errorf("fractional exp: %+v, %v", got, err)
	}
}

// TestKeyRotation: tokens name their key; tokens without kid are tried against
// every key, so adding a key does not invalidate old tokens.
func TestKeyRotation(t *testing.T) {
	v := verifier(t, key1, key2)
	for _, k := range []Key{key1, key2} {
		got, err := v.Verify(sign(t, k, claims()), now)
		if err != nil || got.KeyID != k.ID {
			t.Errorf("signed with %s: %+v, %v", k.ID, got, err)
		}
	}
	payload := `{"room":"r","exp":` + itoa(now.Add(time.Hour).Unix()) + `}`
	if got, err := v.Verify(raw(`{"alg":"HS256"}`, payload, &key2), now); err != nil || got.KeyID != "k2" {
		t.Errorf("no kid: %+v, %v", got, err)
	}
	// After the old key is retired, its tokens fail.
	if _, err := verifier(t, key2).Verify(sign(t, key1, claims()), now); !errors.Is(err, ErrUnknownKey) {
		t.Errorf("retired key: %v", err)
	}
}

func TestWildcardRoom(t *testing.T) {
	c := claims()
	c.Room = AnyRoom
	got, err := verifier(t, key1).Verify(sign(t, key1, c), now)
	if err != nil || !got.AllowsRoom("anything") {
		t.Errorf("%+v, %v", got, err)
	}
}

func TestParseKey(t *testing.T) {
	k, err := ParseKey("main:" + string(key1.Secret))
	if err != nil || k.ID != "main" || string(k.Secret) != string(key1.Secret) {
		t.Errorf("%+v %v", k, err)
	}
	// Secrets may contain colons.
	if k, err := ParseKey("a:b:" + string(key1.Secret)); err != nil || string(k.Secret) != "b:"+string(key1.Secret) {
		t.Errorf("%+v %v", k, err)
	}
	for _, bad := range []string{"", "nosecret", ":" + string(key1.Secret), "k:short", "a b:" + string(key1.Secret)} {
		if _, err := ParseKey(bad); err == nil {
			t.Errorf("ParseKey(%q) accepted", bad)
		}
	}
	if _, err := NewVerifier([]Key{key1, key1}); err == nil {
		t.Error("duplicate ids accepted")
	}
	if _, err := NewVerifier(nil); err == nil {
		t.Error("no keys accepted")
	}
}

func TestPermissions(t *testing.T) {
	p, err := ParsePermissions("publish, admin")
	if err != nil || p != (Permissions{Publish: true, Admin: true}) {
		t.Errorf("%+v %v", p, err)
	}
	if _, err := ParsePermissions("publish,fly"); err == nil {
		t.Error("unknown permission accepted")
	}
	if got := All().Names(); strings.Join(got, ",") != "publish,subscribe,admin" {
		t.Errorf("names %v", got)
	}
	if _, err := Sign(key1, Claims{Room: "r"}); err == nil {
		t.Error("signed without exp")
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
