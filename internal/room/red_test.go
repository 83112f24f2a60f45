package room

import "testing"

// RED triples a voice's rate: not at a 128 kb/s cap, where the video needs it,
// but beside flows that do not back off at any budget, whose losses the audio
// shares.
func TestUseRED(t *testing.T) {
	for _, c := range []struct {
		budget    int
		competing bool
		want      bool
	}{
		{128_000, false, false},
		{redMinBudget - 1, false, false},
		{redMinBudget, false, true},
		{2_000_000, false, true},
		{150_000, true, true},
	} {
		if got := useRED(c.budget, c.competing); got != c.want {
			t.Errorf("useRED(%d, competing %v) = %v, want %v", c.budget, c.competing, got, c.want)
		}
	}
}
