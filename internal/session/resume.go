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

// resumeSecret binds a participant id to a room, so only the client that was given
// the id can take it over after a reconnect.
func resumeSecret(key []byte, room, id string) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(room))
	mac.Write([]byte{0})
	mac.Write([]byte(id))
	return hex.EncodeToString(mac.Sum(nil)[:16])
}

func validResume(key []byte, room, id, secret string) bool {
	if len(id) < 2 || len(id) > 32 || id[0] != 'p' {
		return false
	}
	return hmac.Equal([]byte(resumeSecret(key, room, id)), []byte(secret))
}
