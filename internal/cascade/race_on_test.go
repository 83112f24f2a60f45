//go:build race

package cascade

// raceEnabled: sync.Pool drops items at random under the race detector, so
// the relay's pooled send buffers allocate there only.
const raceEnabled = true
