package turn

import (
	"errors"
	"strings"
	"testing"
	"time"
)

var secret = []byte("0123456789abcdef0123456789abcdef")

func TestMintThenCheck(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	username, password := Mint(secret, "p0123456789ab", now.Add(time.Hour))
	if username != "1800003600:p0123456789ab" {
		t.Fatalf("username %q", username)
	}
	user, want, err := Check(secret, username, now)
	if err != nil || user != "p0123456789ab" || want != password {
		t.Fatalf("Check = %q %q %v; want the user and password %q", user, want, err, password)
	}
	// The last second before expiry is valid, the expiry itself is not.
	if _, _, err := Check(secret, username, now.Add(time.Hour-time.Second)); err != nil {
		t.Fatalf("a second before expiry: %v", err)
	}
	if _, _, err := Check(secret, username, now.Add(time.Hour)); !errors.Is(err, ErrExpired) {
		t.Fatalf("at expiry: %v, want ErrExpired", err)
	}
	// Another secret gives another password: the integrity check fails.
	if _, other, _ := Check([]byte("another secret of enough length!!"), username, now); other == password {
		t.Fatal("the password does not depend on the secret")
	}
}

// The password is base64(HMAC-SHA1(secret, username)), as coturn's
// use-auth-secret expects (the value from Python's hmac module) and as pion's
// own TURN REST helper mints.
func TestPasswordIsTURNREST(t *testing.T) {
	if got := Password([]byte("north"), "1234567890:alice"); got != "VqaISA+2BxkCw1VepQhRdTergGA=" {
		t.Fatalf("password %q", got)
	}
}

func TestParseUsername(t *testing.T) {
	long := strings.Repeat("a", MaxUserLen)
	for _, tc := range []struct {
		in     string
		expiry int64
		user   string
		ok     bool
	}{
		{"1800000000:p1", 1800000000, "p1", true},
		{"1:x", 1, "x", true},
		{"99999999999:" + long, 99999999999, long, true},
		{"1800000000:a.b_c-D9", 1800000000, "a.b_c-D9", true},
		{"", 0, "", false},
		{":p1", 0, "", false},
		{"1800000000", 0, "", false},
		{"1800000000:", 0, "", false},
		{"p1:1800000000", 0, "", false},
		{"-1800000000:p1", 0, "", false},
		{"+1800000000:p1", 0, "", false},
		{" 1800000000:p1", 0, "", false},
		{"1800000000 :p1", 0, "", false},
		{"0x10:p1", 0, "", false},
		{"999999999999:p1", 0, "", false}, // 12 digits
		{"99999999999999999999999:p1", 0, "", false},
		{"1800000000:p1:extra", 0, "", false},
		{"1800000000:" + long + "a", 0, "", false},
		{"1800000000:p 1", 0, "", false},
		{"1800000000:p\x001", 0, "", false},
		{"1800000000:é", 0, "", false},
		{"١٢٣:p1", 0, "", false}, // Arabic-Indic digits
	} {
		expiry, user, err := ParseUsername(tc.in)
		if tc.ok != (err == nil) {
			t.Errorf("%q: err %v, want ok=%v", tc.in, err, tc.ok)
			continue
		}
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Errorf("%q: %v is not ErrMalformed", tc.in, err)
			}
			continue
		}
		if expiry.Unix() != tc.expiry || user != tc.user {
			t.Errorf("%q: %d %q, want %d %q", tc.in, expiry.Unix(), user, tc.expiry, tc.user)
		}
	}
}

// FuzzParseUsername: any client string parses or is refused, never panics;
// what parses is in canonical form (it mints back to itself) and only a
// minted username's password checks.
func FuzzParseUsername(f *testing.F) {
	for _, s := range []string{"1800000000:p0123456789ab", "1:x", "", ":", "1800000000:", "a:b", "99999999999:zz", "1800000000:p1:p2", "01800000000:p1"} {
		f.Add(s)
	}
	now := time.Unix(1_700_000_000, 0)
	f.Fuzz(func(t *testing.T, s string) {
		expiry, user, err := ParseUsername(s)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("%q: %v is not ErrMalformed", s, err)
			}
			if _, _, err := Check(secret, s, now); err == nil {
				t.Fatalf("%q: Check accepts what ParseUsername refuses", s)
			}
			return
		}
		if !ValidUser(user) || strings.ContainsRune(user, ':') {
			t.Fatalf("%q: user %q", s, user)
		}
		minted, password := Mint(secret, user, expiry)
		// Leading zeros are the one non-canonical form that parses.
		if strings.TrimLeft(s, "0") != strings.TrimLeft(minted, "0") && !strings.HasPrefix(s, "0") {
			t.Fatalf("%q parses to %v %q, which mints %q", s, expiry, user, minted)
		}
		_, got, err := Check(secret, s, now)
		if now.Before(expiry) != (err == nil) {
			t.Fatalf("%q at %v: %v", s, now, err)
		}
		if err == nil && s == minted && got != password {
			t.Fatalf("%q: password %q, minted %q", s, got, password)
		}
	})
}
