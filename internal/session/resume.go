package session

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
)

// newParticipantID returns a short random id.
func newParticipantID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "p" + hex.EncodeToString(b[:])
}

// resumeSecret binds a participant id to a room and to the identity of the
// session it was given to (the token's subject; "" without a token in dev
// mode), so that only a client of that identity that was given the id can
// take it over after a reconnect: another identity's token with a stolen
// secret does not resume.
func resumeSecret(key []byte, room, identity, id string) string {
	mac := hmac.New(sha256.New, key)
	// Room names and ids cannot contain 0 (validResume, signal.ValidRoom):
	// the fields cannot run into each other.
	mac.Write([]byte(room))
	mac.Write([]byte{0})
	mac.Write([]byte(id))
	mac.Write([]byte{0})
	mac.Write([]byte(identity))
	return hex.EncodeToString(mac.Sum(nil)[:16])
}

func validResume(key []byte, room, identity, id, secret string) bool {
	if len(id) < 2 || len(id) > 32 || id[0] != 'p' {
		return false
	}
	if _, err := hex.DecodeString(id[1:]); err != nil {
		return false
	}
	return hmac.Equal([]byte(resumeSecret(key, room, identity, id)), []byte(secret))
}
