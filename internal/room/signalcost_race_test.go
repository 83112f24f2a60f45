//go:build race

package room

// raceDetector: the race detector slows every operation several times and
// unevenly, so CPU figures mean nothing under it.
const raceDetector = true
