package turn

import (
	"crypto/hmac"
	"crypto/sha1" //nolint:gosec // the TURN REST scheme is HMAC-SHA1 (coturn's use-auth-secret)
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Short-lived credentials in the "TURN REST" scheme (draft-uberti-behave-turn-rest,
// coturn's use-auth-secret): the username is "<expiry>:<user>", expiry in Unix
// seconds, and the password is base64(HMAC-SHA1(secret, username)). Anyone who
// holds the shared secret can mint them — Podium at join, for its own TURN
// server or an external one — and the TURN server checks them with no state.

// Errors of a username the server refuses; the TURN client learns only that it
// was refused (pion answers 400), the metrics tell them apart.
var (
	ErrMalformed = errors.New("turn: malformed username")
	ErrExpired   = errors.New("turn: credentials expired")
)

// MaxUserLen bounds the user part of a username; participant ids are 13 bytes.
const MaxUserLen = 64

// maxExpiryDigits bounds the expiry (Unix seconds): 11 digits reach the year 5138.
const maxExpiryDigits = 11

// Mint returns the username and password for user, valid until expiry.
// user must pass ValidUser (participant ids do).
func Mint(secret []byte, user string, expiry time.Time) (username, password string) {
	username = strconv.FormatInt(expiry.Unix(), 10) + ":" + user
	return username, Password(secret, username)
}

// Password is the password of username under secret.
func Password(secret []byte, username string) string {
	mac := hmac.New(sha1.New, secret)
	mac.Write([]byte(username))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// ParseUsername splits a username from an untrusted client into its expiry and
// user. The expiry is 1 to 11 decimal digits (no sign, no spaces); the user is
// 1 to MaxUserLen bytes of [A-Za-z0-9._-].
func ParseUsername(username string) (expiry time.Time, user string, err error) {
	i := 0
	for i < len(username) && username[i] >= '0' && username[i] <= '9' {
		i++
	}
	if i == 0 || i > maxExpiryDigits || i == len(username) || username[i] != ':' {
		return time.Time{}, "", fmt.Errorf("%w: want <unix expiry>:<user>", ErrMalformed)
	}
	secs, err := strconv.ParseInt(username[:i], 10, 64)
	if err != nil {
		return time.Time{}, "", fmt.Errorf("%w: expiry: %v", ErrMalformed, err)
	}
	user = username[i+1:]
	if !ValidUser(user) {
		return time.Time{}, "", fmt.Errorf("%w: user must be 1 to %d of [A-Za-z0-9._-]", ErrMalformed, MaxUserLen)
	}
	return time.Unix(secs, 0), user, nil
}

// ValidUser reports whether user may be the user part of a username.
func ValidUser(user string) bool {
	if len(user) == 0 || len(user) > MaxUserLen {
		return false
	}
	for i := 0; i < len(user); i++ {
		c := user[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// Check validates a username at now: well formed and not expired. It returns
// the user it was minted for and the password it must come with; whether the
// client knows that password is for the message integrity check to tell.
func Check(secret []byte, username string, now time.Time) (user, password string, err error) {
	expiry, user, err := ParseUsername(username)
	if err != nil {
		return "", "", err
	}
	if !now.Before(expiry) {
		return "", "", fmt.Errorf("%w at %s", ErrExpired, expiry.UTC().Format(time.RFC3339))
	}
	return user, Password(secret, username), nil
}
