package bench

import (
	"slices"
	"testing"
)

// TestPlace: the thesis' situations placed by the three strategies. In the
// "middle" room Algorithm 3 splits the Europeans and the us-west user off the
// us-east conference; ours keeps it on one bridge, as a single bridge would.
// Users far apart (ap and eu) get a split from ours where it lowers the
// model's mouth-to-ear delay below the single bridge's.
func TestPlace(t *testing.T) {
	for _, room := range WANRooms {
		got := map[string][]string{}
		for _, s := range []string{StrategySingle, StrategyNearest, StrategyOurs} {
			b, err := Place(s, room.Users)
			if err != nil {
				t.Fatal(err)
			}
			got[s] = b
			t.Logf("%-6s %-7s %v model %.0f ms", room.Name, s, b, ModelMouthToEar(room.Users, b))
		}
		single, nearest, ours := ModelMouthToEar(room.Users, got[StrategySingle]), ModelMouthToEar(room.Users, got[StrategyNearest]),
			ModelMouthToEar(room.Users, got[StrategyOurs])
		if ours > single+1 || ours > nearest+1 {
			t.Errorf("%s: ours %.0f ms, single %.0f ms, nearest %.0f ms (model)", room.Name, ours, single, nearest)
		}
	}
	middle, _ := Place(StrategyOurs, WANRooms[0].Users)
	if !slices.Equal(middle, []string{"us-e", "us-e", "us-e", "us-e", "us-e"}) {
		t.Errorf("middle room, ours: %v, want all on us-e", middle)
	}
	naive, _ := Place(StrategyNearest, WANRooms[0].Users)
	if !slices.Equal(naive, []string{"us-e", "eu", "eu", "us-e", "us-w"}) {
		t.Errorf("middle room, Algorithm 3: %v, want the thesis' split", naive)
	}
}
