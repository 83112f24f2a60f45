//go:build !race

package cascade

const raceEnabled = false
