//go:build !race

package room

const raceDetector = false
