//go:build !race

package forward

const raceEnabled = false
