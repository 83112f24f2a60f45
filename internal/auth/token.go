// Package auth is Podium's access tokens: JSON Web Tokens (RFC 7519) signed with
// HMAC-SHA256 (HS256) and nothing else. A token grants one identity access to one
// room (or every room) with a set of permissions until it expires.
//
// It is a thin adapter over github.com/golang-jwt/jwt/v5, which splits, decodes,
// restricts the algorithm, checks signatures and judges time. What the library
// leaves out is kept here: duplicate JSON keys, typ and crit in the header, the
// signature's length, strict numeric dates, the claims' meaning and the
// package's own errors, which callers map to protocol error codes.
//
// The package never reads the clock: Verify takes the time as an argument.
package auth

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Leeway is the clock skew tolerated on exp and nbf.
const Leeway = 30 * time.Second

// MaxTokenBytes bounds what Verify reads; longer tokens are malformed.
const MaxTokenBytes = 4096

// MinSecretBytes is the shortest HMAC key accepted: HS256 wants at least 256 bits.
const MinSecretBytes = 32

// AnyRoom as the room claim grants access to every room (admin tokens).
const AnyRoom = "*"

// Errors of Verify. Every error wraps exactly one of them.
var (
	ErrMalformed   = errors.New("malformed token")
	ErrAlgorithm   = errors.New("token algorithm not accepted (only HS256)")
	ErrUnknownKey  = errors.New("token signed with an unknown key")
	ErrSignature   = errors.New("token signature does not verify")
	ErrExpired     = errors.New("token expired")
	ErrNotYetValid = errors.New("token not valid yet")
	ErrClaims      = errors.New("token claims invalid")
)

// Key is one HMAC signing key with its id (the token header's "kid").
type Key struct {
	ID     string
	Secret []byte
}

// ParseKey reads "id:secret"; the secret is used as its bytes.
func ParseKey(s string) (Key, error) {
	id, secret, ok := strings.Cut(s, ":")
	switch {
	case !ok:
		return Key{}, errors.New("not id:secret")
	case id == "" || len(id) > 64 || strings.ContainsAny(id, " \t\"\\"):
		return Key{}, fmt.Errorf("key id %q must be 1-64 characters without spaces or quotes", id)
	case len(secret) < MinSecretBytes:
		return Key{}, fmt.Errorf("key %q: secret of %d bytes is too short; use at least %d (for example `openssl rand -hex 32`)", id, len(secret), MinSecretBytes)
	}
	return Key{ID: id, Secret: []byte(secret)}, nil
}

// Verifier checks tokens against a set of keys.
type Verifier struct {
	keys    []Key
	secrets jwt.VerificationKeySet // the keys' secrets in the same order, for tokens without kid
	parser  *jwt.Parser
}

// NewVerifier returns a verifier for keys (ids must be distinct); the first key is
// the one Sign callers usually pick.
func NewVerifier(keys []Key) (*Verifier, error) {
	if len(keys) == 0 {
		return nil, errors.New("no keys")
	}
	v := &Verifier{keys: slices.Clone(keys)}
	seen := map[string]bool{}
	for _, k := range keys {
		if seen[k.ID] {
			return nil, fmt.Errorf("key id %q given twice", k.ID)
		}
		if len(k.Secret) < MinSecretBytes {
			return nil, fmt.Errorf("key %q: secret shorter than %d bytes", k.ID, MinSecretBytes)
		}
		seen[k.ID] = true
		v.secrets.Keys = append(v.secrets.Keys, k.Secret)
	}
	// Claims are validated after they are decoded, by Claims.Valid: the
	// library would decode them before the signature is checked.
	v.parser = jwt.NewParser(jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithStrictDecoding(), jwt.WithoutClaimsValidation())
	return v, nil
}

// Keys are the verifier's keys, in configuration order.
func (v *Verifier) Keys() []Key { return slices.Clone(v.keys) }

// Verify checks token at now and returns its claims. The signature is checked
// before any claim is looked at; the algorithm must be exactly HS256; exp is
// required; a kid must name a configured key (without kid every key is tried).
func (v *Verifier) Verify(token string, now time.Time) (*Claims, error) {
	if len(token) > MaxTokenBytes {
		return nil, fmt.Errorf("%w: longer than %d bytes", ErrMalformed, MaxTokenBytes)
	}
	var (
		signed  signedClaims
		kid     string
		refused error // keyFor's verdict, already one of the package's errors
	)
	t, err := v.parser.ParseWithClaims(token, &signed, func(t *jwt.Token) (any, error) {
		var key any
		key, kid, refused = v.keyFor(t)
		return key, refused
	})
	switch {
	case refused != nil:
		return nil, refused
	case err != nil:
		return nil, libraryError(t, err)
	}
	var p payload
	if err := decodeStrictJSON(signed.json, &p); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrClaims, err)
	}
	c, err := p.claims()
	if err != nil {
		return nil, err
	}
	c.KeyID = v.signer(kid, token, t.Signature).ID
	if err := c.Valid(now); err != nil {
		return nil, err
	}
	return c, nil
}

// header is what keyFor reads of a token's header. The library decodes it into
// a map, where a second "alg" silently replaces the first.
type header struct {
	Typ  string          `json:"typ,omitempty"`
	Kid  string          `json:"kid,omitempty"`
	Crit json.RawMessage `json:"crit,omitempty"`
}

// keyFor checks what the library leaves unchecked in t's header and signature,
// then gives the secret to verify with: the kid's, or every key's.
func (v *Verifier) keyFor(t *jwt.Token) (secret any, kid string, err error) {
	h64, _, _ := strings.Cut(t.Raw, ".")
	hb, err := v.parser.DecodeSegment(h64)
	if err != nil {
		return nil, "", fmt.Errorf("%w: header: %v", ErrMalformed, err)
	}
	var h header
	if err := decodeStrictJSON(hb, &h); err != nil {
		return nil, "", fmt.Errorf("%w: header: %v", ErrMalformed, err)
	}
	switch {
	case h.Typ != "" && !strings.EqualFold(h.Typ, "JWT"):
		return nil, "", fmt.Errorf("%w: typ %q", ErrMalformed, truncate(h.Typ))
	case len(h.Crit) > 0:
		return nil, "", fmt.Errorf("%w: critical header extensions are not supported", ErrMalformed)
	case len(t.Signature) != sha256.Size:
		return nil, "", fmt.Errorf("%w: signature is not 32 base64url bytes", ErrMalformed)
	case h.Kid == "":
		return v.secrets, "", nil
	}
	for _, k := range v.keys {
		if k.ID == h.Kid {
			return k.Secret, k.ID, nil
		}
	}
	return nil, "", fmt.Errorf("%w %q", ErrUnknownKey, truncate(h.Kid))
}

// signer is the key that signed a verified token: the kid's, or, without kid,
// the first that verifies (the library does not say which of a set matched).
func (v *Verifier) signer(kid, token string, sig []byte) Key {
	signing := token[:strings.LastIndexByte(token, '.')]
	for _, k := range v.keys {
		if kid != "" && k.ID == kid || kid == "" && jwt.SigningMethodHS256.Verify(signing, sig, k.Secret) == nil {
			return k
		}
	}
	panic("auth: a verified token matches none of the keys")
}

// libraryError maps the library's refusals onto the package's errors.
func libraryError(t *jwt.Token, err error) error {
	var alg string
	if t != nil {
		alg, _ = t.Header["alg"].(string)
	}
	switch {
	case errors.Is(err, jwt.ErrTokenMalformed):
		return fmt.Errorf("%w: %s", ErrMalformed, strings.TrimPrefix(err.Error(), jwt.ErrTokenMalformed.Error()+": "))
	case alg != jwt.SigningMethodHS256.Alg():
		return fmt.Errorf("%w: alg %q", ErrAlgorithm, truncate(alg))
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		return ErrSignature
	default:
		return fmt.Errorf("%w: %v", ErrMalformed, err)
	}
}

// signedClaims holds the payload's JSON until the signature has verified: the
// library decodes claims first, Verify only after.
type signedClaims struct {
	jwt.RegisteredClaims // never filled: the claims are payload's
	json                 []byte
}

func (s *signedClaims) UnmarshalJSON(b []byte) error {
	s.json = bytes.Clone(b)
	return nil
}

// Sign makes a token for c with key. Expires must be set.
func Sign(key Key, c Claims) (string, error) {
	if c.Expires.IsZero() {
		return "", errors.New("sign: Expires is required")
	}
	if len(key.Secret) < MinSecretBytes {
		return "", fmt.Errorf("sign: secret shorter than %d bytes", MinSecretBytes)
	}
	p := payload{Sub: c.Identity, Name: c.Name, Room: c.Room, Perms: c.Permissions.Names(), E2EE: c.E2EE, Region: c.Region,
		Iat: optional(c.IssuedAt), Nbf: optional(c.NotBefore), Exp: optional(c.Expires)}
	t := jwt.NewWithClaims(jwt.SigningMethodHS256, &p)
	if key.ID != "" {
		t.Header["kid"] = key.ID
	}
	return t.SignedString(key.Secret)
}

// decodeStrictJSON decodes one JSON object into v; trailing data is an error and
// so are duplicate keys among v's fields (a classic JWT confusion).
func decodeStrictJSON(b []byte, v any) error {
	if len(b) == 0 || b[0] != '{' {
		return errors.New("not a JSON object")
	}
	if err := checkDuplicateKeys(b); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(v); err != nil {
		return err
	}
	if len(bytes.TrimSpace(b[dec.InputOffset():])) != 0 {
		return errors.New("trailing data")
	}
	return nil
}

// checkDuplicateKeys rejects an object with the same top-level key twice
// (encoding/json, and so the library, silently keep the last one).
func checkDuplicateKeys(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if _, err := dec.Token(); err != nil { // {
		return err
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := t.(string)
		if seen[key] {
			return fmt.Errorf("duplicate key %q", truncate(key))
		}
		seen[key] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return err
		}
	}
	return nil
}

func truncate(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
