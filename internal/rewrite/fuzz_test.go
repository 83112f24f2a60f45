package rewrite

import "testing"

// FuzzProjector runs the trace generator with a script from the fuzzer
// (switches, temporal changes, receiver and source pauses, restarts, loss,
// delays, duplicates, trouble around key frames; see the op constants in
// trace_test.go) and checks every invariant of checkTrace.
func FuzzProjector(f *testing.F) {
	// More seeds, by scenario, in testdata/fuzz/FuzzProjector.
	f.Add(uint64(1), []byte{})
	f.Fuzz(func(t *testing.T, seed uint64, script []byte) {
		// 180 frames (6 s) use about 50 operations.
		if len(script) > 240 {
			script = script[:240]
		}
		tr := genTrace(seed, 180, script)
		checkTrace(t, tr, runTrace(tr))
	})
}
