//go:build race

package forward

// raceEnabled: sync.Pool drops items at random under the race detector, so
// code that pools (crypto/hmac inside SRTP's AES-CM) allocates there only.
const raceEnabled = true
