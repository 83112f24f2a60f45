//go:build race

package room

// raceDetector: the race detector slows every operation several times and
// unevenly, so TestSignalingCostPerJoinIsFlat compares no CPU under it.
const raceDetector = true
