package auth

import (
	"errors"
	"testing"
	"time"
)

func TestRegionClaim(t *testing.T) {
	key := Key{ID: "k", Secret: []byte("0123456789abcdef0123456789abcdef")}
	v, err := NewVerifier([]Key{key})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	for _, region := range []string{"", "eu-west", "ap_1"} {
		tok, err := Sign(key, Claims{Room: "r", Region: region, Expires: now.Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		c, err := v.Verify(tok, now)
		if err != nil || c.Region != region {
			t.Fatalf("region %q: verified %+v, %v", region, c, err)
		}
	}
	tok, _ := Sign(key, Claims{Room: "r", Region: "eu west!", Expires: now.Add(time.Hour)})
	if _, err := v.Verify(tok, now); !errors.Is(err, ErrClaims) {
		t.Fatalf("a bad region verified: %v", err)
	}
}
