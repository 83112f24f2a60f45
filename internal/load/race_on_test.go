//go:build race

package load

// raceEnabled: the race detector slows the server and the participants several
// times; on a busy machine delay spikes then keep bandwidth estimates low.
const raceEnabled = true
