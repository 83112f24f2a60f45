// Package auth is Podium's access tokens: JSON Web Tokens (RFC 7519) signed with
// HMAC-SHA256 (HS256) and nothing else. A token grants one identity access to one
// room (or every room) with a set of permissions until it expires.
//
// The package never reads the clock: Verify takes the time as an argument.
package auth

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Leeway is the clock skew tolerated on exp and nbf.
const Leeway = 30 * time.Second

// MaxTokenBytes bounds what Verify reads; longer tokens are malformed.
const MaxTokenBytes = 4096

// MinSecretBytes is the shortest HMAC key accepted: HS256 wants at least 256 bits.
const MinSecretBytes = 32

// AnyRoom as the room claim grants access to every room (admin tokens).
const AnyRoom = "*"

// Permission names, as they appear in a token's "perms" claim.
const (
	PermPublish   = "publish"   // may send media
	PermSubscribe = "subscribe" // may receive media
	PermAdmin     = "admin"     // may change room settings and use the admin API
)

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

// Permissions are what a token allows besides joining.
type Permissions struct {
	Publish   bool `json:"publish"`
	Subscribe bool `json:"subscribe"`
	Admin     bool `json:"admin"`
}

// All is every permission (dev mode).
func All() Permissions { return Permissions{Publish: true, Subscribe: true, Admin: true} }

// Names lists the granted permissions in a fixed order.
func (p Permissions) Names() []string {
	out := []string{}
	if p.Publish {
		out = append(out, PermPublish)
	}
	if p.Subscribe {
		out = append(out, PermSubscribe)
	}
	if p.Admin {
		out = append(out, PermAdmin)
	}
	return out
}

// ParsePermissions reads a comma-separated list such as "publish,subscribe".
func ParsePermissions(list string) (Permissions, error) {
	var p Permissions
	for _, name := range strings.Split(list, ",") {
		if name = strings.TrimSpace(name); name == "" {
			continue
		}
		if err := p.grant(name); err != nil {
			return Permissions{}, err
		}
	}
	return p, nil
}

func (p *Permissions) grant(name string) error {
	switch name {
	case PermPublish:
		p.Publish = true
	case PermSubscribe:
		p.Subscribe = true
	case PermAdmin:
		p.Admin = true
	default:
		return fmt.Errorf("unknown permission %q (want publish, subscribe or admin)", name)
	}
	return nil
}

// Claims are a verified token's contents.
type Claims struct {
	Room        string // a room name, or AnyRoom
	Identity    string // "sub": who the token was issued to
	Name        string // display name; when set it overrides the name in join
	Permissions Permissions
	IssuedAt    time.Time // zero when absent
	NotBefore   time.Time // zero when absent
	Expires     time.Time
	KeyID       string // the key that verified it
}

// AllowsRoom reports whether the claims grant access to room.
func (c *Claims) AllowsRoom(room string) bool { return c.Room == AnyRoom || c.Room == room }

// Valid reports whether the claims are within their validity period at now
// (with Leeway); the error is ErrExpired or ErrNotYetValid.
func (c *Claims) Valid(now time.Time) error {
	if !c.Expires.IsZero() && now.After(c.Expires.Add(Leeway)) {
		return fmt.Errorf("%w at %s", ErrExpired, c.Expires.UTC().Format(time.RFC3339))
	}
	if !c.NotBefore.IsZero() && now.Before(c.NotBefore.Add(-Leeway)) {
		return fmt.Errorf("%w before %s", ErrNotYetValid, c.NotBefore.UTC().Format(time.RFC3339))
	}
	return nil
}

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
	keys []Key
}

// NewVerifier returns a verifier for keys (ids must be distinct); the first key is
// the one Sign callers usually pick.
func NewVerifier(keys []Key) (*Verifier, error) {
	if len(keys) == 0 {
		return nil, errors.New("no keys")
	}
	seen := map[string]bool{}
	for _, k := range keys {
		if seen[k.ID] {
			return nil, fmt.Errorf("key id %q given twice", k.ID)
		}
		if len(k.Secret) < MinSecretBytes {
			return nil, fmt.Errorf("key %q: secret shorter than %d bytes", k.ID, MinSecretBytes)
		}
		seen[k.ID] = true
	}
	return &Verifier{keys: slices.Clone(keys)}, nil
}

// Keys are the verifier's keys, in configuration order.
func (v *Verifier) Keys() []Key { return slices.Clone(v.keys) }

type header struct {
	Alg  string          `json:"alg"`
	Typ  string          `json:"typ,omitempty"`
	Kid  string          `json:"kid,omitempty"`
	Crit json.RawMessage `json:"crit,omitempty"`
}

type payload struct {
	Sub   string   `json:"sub,omitempty"`
	Name  string   `json:"name,omitempty"`
	Room  string   `json:"room"`
	Perms []string `json:"perms"`
	Iat   *numeric `json:"iat,omitempty"`
	Nbf   *numeric `json:"nbf,omitempty"`
	Exp   *numeric `json:"exp"`
}

// numeric is a JWT NumericDate: seconds since the epoch, possibly fractional.
type numeric struct{ t time.Time }

func (n *numeric) UnmarshalJSON(b []byte) error {
	if len(b) == 0 || b[0] == '"' || b[0] == 'n' || b[0] == 't' || b[0] == 'f' || b[0] == '{' || b[0] == '[' {
		return errors.New("not a number")
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	// Beyond year 9999 (or before 0001) a time.Time cannot represent it.
	if math.IsNaN(f) || f < -62135596800 || f > 253402300799 {
		return errors.New("out of range")
	}
	sec, frac := math.Modf(f)
	n.t = time.Unix(int64(sec), int64(frac*1e9)).UTC()
	return nil
}

func (n *numeric) MarshalJSON() ([]byte, error) { return json.Marshal(n.t.Unix()) }

func (n *numeric) time() time.Time {
	if n == nil {
		return time.Time{}
	}
	return n.t
}

var b64 = base64.RawURLEncoding.Strict()

// Verify checks token at now and returns its claims. The signature is checked
// before any claim is looked at; the algorithm must be exactly HS256; exp is
// required; a kid must name a configured key (without kid every key is tried).
func (v *Verifier) Verify(token string, now time.Time) (*Claims, error) {
	if len(token) > MaxTokenBytes {
		return nil, fmt.Errorf("%w: longer than %d bytes", ErrMalformed, MaxTokenBytes)
	}
	h64, rest, ok1 := strings.Cut(token, ".")
	p64, s64, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || strings.Contains(s64, ".") {
		return nil, fmt.Errorf("%w: want three dot-separated parts", ErrMalformed)
	}
	hb, err := b64.DecodeString(h64)
	if err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrMalformed, err)
	}
	var h header
	if err := decodeStrictJSON(hb, &h); err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrMalformed, err)
	}
	if h.Alg != "HS256" {
		return nil, fmt.Errorf("%w: alg %q", ErrAlgorithm, truncate(h.Alg))
	}
	if h.Typ != "" && !strings.EqualFold(h.Typ, "JWT") {
		return nil, fmt.Errorf("%w: typ %q", ErrMalformed, truncate(h.Typ))
	}
	if len(h.Crit) > 0 {
		return nil, fmt.Errorf("%w: critical header extensions are not supported", ErrMalformed)
	}
	sig, err := b64.DecodeString(s64)
	if err != nil || len(sig) != sha256.Size {
		return nil, fmt.Errorf("%w: signature is not 32 base64url bytes", ErrMalformed)
	}
	key, err := v.match(h.Kid, token[:len(h64)+1+len(p64)], sig)
	if err != nil {
		return nil, err
	}
	pb, err := b64.DecodeString(p64)
	if err != nil {
		return nil, fmt.Errorf("%w: payload: %v", ErrMalformed, err)
	}
	var p payload
	if err := decodeStrictJSON(pb, &p); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrClaims, err)
	}
	c, err := p.claims()
	if err != nil {
		return nil, err
	}
	c.KeyID = key.ID
	if err := c.Valid(now); err != nil {
		return nil, err
	}
	return c, nil
}

// match finds the key whose HMAC of signed is sig.
func (v *Verifier) match(kid, signed string, sig []byte) (Key, error) {
	for _, k := range v.keys {
		if kid != "" && k.ID != kid {
			continue
		}
		if hmac.Equal(mac(k.Secret, signed), sig) {
			return k, nil
		}
		if kid != "" {
			return Key{}, ErrSignature
		}
	}
	if kid != "" {
		return Key{}, fmt.Errorf("%w %q", ErrUnknownKey, truncate(kid))
	}
	return Key{}, ErrSignature
}

func (p *payload) claims() (*Claims, error) {
	if p.Exp == nil {
		return nil, fmt.Errorf("%w: exp is required", ErrClaims)
	}
	if p.Room != AnyRoom && !validRoom(p.Room) {
		return nil, fmt.Errorf("%w: room %q is not a room name or %q", ErrClaims, truncate(p.Room), AnyRoom)
	}
	c := &Claims{Room: p.Room, Identity: p.Sub, Name: p.Name,
		IssuedAt: p.Iat.time(), NotBefore: p.Nbf.time(), Expires: p.Exp.time()}
	for _, name := range p.Perms {
		if err := c.Permissions.grant(name); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrClaims, err)
		}
	}
	return c, nil
}

// Sign makes a token for c with key. Expires must be set.
func Sign(key Key, c Claims) (string, error) {
	if c.Expires.IsZero() {
		return "", errors.New("sign: Expires is required")
	}
	if len(key.Secret) < MinSecretBytes {
		return "", fmt.Errorf("sign: secret shorter than %d bytes", MinSecretBytes)
	}
	h, err := json.Marshal(header{Alg: "HS256", Typ: "JWT", Kid: key.ID})
	if err != nil {
		return "", err
	}
	p := payload{Sub: c.Identity, Name: c.Name, Room: c.Room, Perms: c.Permissions.Names(), Exp: &numeric{c.Expires}}
	if !c.IssuedAt.IsZero() {
		p.Iat = &numeric{c.IssuedAt}
	}
	if !c.NotBefore.IsZero() {
		p.Nbf = &numeric{c.NotBefore}
	}
	pb, err := json.Marshal(p)
	if err != nil {
		return "", err
	}
	signed := b64.EncodeToString(h) + "." + b64.EncodeToString(pb)
	return signed + "." + b64.EncodeToString(mac(key.Secret, signed)), nil
}

func mac(secret []byte, signed string) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(signed))
	return m.Sum(nil)
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
// (encoding/json would silently keep the last one).
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

// validRoom mirrors signal.ValidRoom (auth imports nothing of the project).
func validRoom(s string) bool {
	if len(s) < 1 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

func truncate(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
