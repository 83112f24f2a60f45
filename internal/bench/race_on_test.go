//go:build race

package bench

// raceEnabled: the race detector slows the server child and the participants
// several times; on a busy machine delay spikes then keep bandwidth estimates
// low, so checks that need the estimate to climb run without it only.
const raceEnabled = true
