package auth

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Permission names, as they appear in a token's "perms" claim.
const (
	PermPublish   = "publish"   // may send media
	PermSubscribe = "subscribe" // may receive media
	PermAdmin     = "admin"     // may change room settings and use the admin API
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
	// E2EE: the holder must encrypt its media end to end (its join says
	// e2ee), else the join is refused with e2ee-required (docs/e2ee.md).
	E2EE bool
	// Region places the holder in a cluster region (docs/cluster.md); empty:
	// the region of the node it reached, or its ?region=.
	Region    string
	IssuedAt  time.Time // zero when absent
	NotBefore time.Time // zero when absent
	Expires   time.Time
	KeyID     string // the key that verified it
}

// AllowsRoom reports whether the claims grant access to room.
func (c *Claims) AllowsRoom(room string) bool { return c.Room == AnyRoom || c.Room == room }

// Valid reports whether the claims are within their validity period at now
// (with Leeway); the error is ErrExpired or ErrNotYetValid. It is the library's
// validator, so a join and every later privileged action judge time alike.
func (c *Claims) Valid(now time.Time) error {
	p := payload{Exp: optional(c.Expires), Nbf: optional(c.NotBefore)}
	err := jwt.NewValidator(jwt.WithLeeway(Leeway), jwt.WithTimeFunc(func() time.Time { return now })).Validate(&p)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, jwt.ErrTokenExpired):
		return fmt.Errorf("%w at %s", ErrExpired, c.Expires.UTC().Format(time.RFC3339))
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		return fmt.Errorf("%w before %s", ErrNotYetValid, c.NotBefore.UTC().Format(time.RFC3339))
	default:
		return fmt.Errorf("%w: %v", ErrClaims, err)
	}
}

// payload is the claims as JSON. Its numeric dates are stricter than the
// library's jwt.NumericDate, which takes numbers written as strings and drops
// fractions of a second.
type payload struct {
	Sub    string   `json:"sub,omitempty"`
	Name   string   `json:"name,omitempty"`
	Room   string   `json:"room"`
	Perms  []string `json:"perms"`
	E2EE   bool     `json:"e2ee,omitempty"`
	Region string   `json:"region,omitempty"`
	Iat    *numeric `json:"iat,omitempty"`
	Nbf    *numeric `json:"nbf,omitempty"`
	Exp    *numeric `json:"exp"`
}

// payload is a jwt.Claims, for signing and for the validator.
func (p *payload) GetExpirationTime() (*jwt.NumericDate, error) { return p.Exp.date(), nil }
func (p *payload) GetNotBefore() (*jwt.NumericDate, error)      { return p.Nbf.date(), nil }
func (p *payload) GetIssuedAt() (*jwt.NumericDate, error)       { return p.Iat.date(), nil }
func (p *payload) GetIssuer() (string, error)                   { return "", nil }
func (p *payload) GetSubject() (string, error)                  { return p.Sub, nil }
func (p *payload) GetAudience() (jwt.ClaimStrings, error)       { return nil, nil }

func (p *payload) claims() (*Claims, error) {
	if p.Exp == nil {
		return nil, fmt.Errorf("%w: exp is required", ErrClaims)
	}
	if p.Room != AnyRoom && !validRoom(p.Room) {
		return nil, fmt.Errorf("%w: room %q is not a room name or %q", ErrClaims, truncate(p.Room), AnyRoom)
	}
	if p.Region != "" && !ValidRegion(p.Region) {
		return nil, fmt.Errorf("%w: region %q is not 1 to 32 of a-z, A-Z, 0-9, - and _", ErrClaims, truncate(p.Region))
	}
	c := &Claims{Room: p.Room, Identity: p.Sub, Name: p.Name, E2EE: p.E2EE, Region: p.Region,
		IssuedAt: p.Iat.time(), NotBefore: p.Nbf.time(), Expires: p.Exp.time()}
	for _, name := range p.Perms {
		if err := c.Permissions.grant(name); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrClaims, err)
		}
	}
	return c, nil
}

// numeric is a JWT NumericDate: seconds since the epoch, possibly fractional.
type numeric struct{ t time.Time }

func optional(t time.Time) *numeric {
	if t.IsZero() {
		return nil
	}
	return &numeric{t}
}

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

// date is n for the library, fractions of a second kept.
func (n *numeric) date() *jwt.NumericDate {
	if n == nil {
		return nil
	}
	return &jwt.NumericDate{Time: n.t}
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

// ValidRegion reports whether s can name a region or a cluster node (token
// claims, flags, ?region= and ?bridge=): 1 to 32 of a-z, A-Z, 0-9, - and _.
func ValidRegion(s string) bool {
	if len(s) < 1 || len(s) > 32 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}
