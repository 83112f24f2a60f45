package client

import "testing"

func TestTrackStatsCountsLossAcrossWrap(t *testing.T) {
	var st TrackStats
	for _, seq := range []uint16{65533, 65534, 65535, 1, 2, 0, 4} { // 3 lost, 0 late
		st.observeSeq(seq)
		st.Packets++
	}
	if st.Expected() != 8 || st.Lost() != 1 {
		t.Fatalf("expected %d lost %d, want 8 and 1 (seq 3 missing)", st.Expected(), st.Lost())
	}
}
