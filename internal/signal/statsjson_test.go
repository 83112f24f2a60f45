package signal

import (
	"bytes"
	"encoding/json"
	"strconv"
	"testing"
)

// jsonFrame is the frame encoding/json makes of a stats body.
func jsonFrame(t testing.TB, st *Stats) []byte {
	t.Helper()
	fields, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	return append([]byte(`{"type":"stats",`), fields[1:]...)
}

func someVideos(n int) map[string]VideoStats {
	v := map[string]VideoStats{}
	for i := range n {
		v["p"+strconv.Itoa(n-i)] = VideoStats{Encoding: i%3 - 1, Temporal: i % 3, Bitrate: 1000 * i, Suspended: i%3 == 0}
	}
	return v
}

func TestStatsFastPathIsJSON(t *testing.T) {
	for _, c := range []struct {
		name string
		st   Stats
	}{
		{"no videos map", Stats{Estimate: 1_000_000}},
		{"no videos", Stats{Estimate: 300_000, Allocated: 64_000, Switches: 2, Videos: map[string]VideoStats{}}},
		{"seven", Stats{Estimate: 2_500_000, Allocated: 2_100_000, Switches: 17, Videos: someVideos(7)}},
		{"negative", Stats{Estimate: -1, Allocated: -2, Switches: -3, Videos: map[string]VideoStats{"a": {Encoding: -1, Temporal: -5, Bitrate: -7}}}},
		{"as many as sorted on the stack", Stats{Videos: someVideos(maxFastVideos)}},
		{"more: json.Marshal", Stats{Videos: someVideos(maxFastVideos + 1)}},
		{"ids json escapes: json.Marshal", Stats{Videos: map[string]VideoStats{"a<b": {}, `q"`: {}, "é": {}, "\x01": {}}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := Encode(TypeStats, &c.st)
			if err != nil {
				t.Fatal(err)
			}
			if want := jsonFrame(t, &c.st); !bytes.Equal(got, want) {
				t.Fatalf("got  %s\nwant %s", got, want)
			}
		})
	}
}

// TestStatsEncodedWithOneAllocation: the frame is the one allocation.
func TestStatsEncodedWithOneAllocation(t *testing.T) {
	st := Stats{Estimate: 2_500_000, Allocated: 2_100_000, Switches: 17, Videos: someVideos(7)}
	allocs := testing.AllocsPerRun(200, func() {
		if _, err := Encode(TypeStats, &st); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 1 {
		t.Errorf("%v allocations per stats message, want 1 (the frame)", allocs)
	}
}

func FuzzStatsFastPath(f *testing.F) {
	f.Add(int64(1_000_000), "p1", "p2", 2, true)
	f.Add(int64(-5), "", "a&b", -1, false)
	f.Fuzz(func(t *testing.T, estimate int64, id1, id2 string, enc int, suspended bool) {
		st := Stats{Estimate: int(estimate), Allocated: int(estimate / 3), Switches: enc,
			Videos: map[string]VideoStats{id1: {Encoding: enc, Bitrate: int(estimate)}, id2: {Temporal: enc, Suspended: suspended}}}
		got, err := Encode(TypeStats, &st)
		if err != nil {
			t.Fatal(err)
		}
		if want := jsonFrame(t, &st); !bytes.Equal(got, want) {
			t.Fatalf("got  %s\nwant %s", got, want)
		}
	})
}
