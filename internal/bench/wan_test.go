package bench

import (
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
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

// TestWANChart: one bar per room and strategy, its height the end-to-end RTT
// (twice the measured mouth-to-ear), grouped by room, the command as caption.
func TestWANChart(t *testing.T) {
	rows := []WANRow{
		{Strategy: StrategySingle, Room: "middle", MeanMs: 146.4, ModelMs: 139},
		{Strategy: StrategySingle, Room: "far", MeanMs: 364.5, ModelMs: 354},
		{Strategy: StrategyOurs, Room: "middle", MeanMs: 151.1, ModelMs: 139},
		{Strategy: StrategyOurs, Room: "far", MeanMs: 221.4, ModelMs: 206},
	}
	svg := string(WANChart(rows, "podium bench wan --svg x.svg").SVG())
	heights := map[string]float64{}
	for _, m := range regexp.MustCompile(`height="([0-9.]+)" fill="#[0-9a-f]+"><title>([^<]+)</title>`).FindAllStringSubmatch(svg, -1) {
		h, _ := strconv.ParseFloat(m[1], 64)
		heights[m[2]] = h
	}
	want := map[string]float64{"middle, single: 293": 292.8, "far, single: 729": 729, "middle, ours: 302": 302.2, "far, ours: 443": 442.8}
	if len(heights) != len(want) {
		t.Fatalf("bars %v, want %v", heights, want)
	}
	for bar, rtt := range want {
		h, ok := heights[bar]
		if !ok {
			t.Fatalf("no bar %q in %v", bar, heights)
		}
		if ratio := h / heights["far, single: 729"]; math.Abs(ratio-rtt/729) > 0.01 {
			t.Errorf("bar %q: height ratio %.3f, want %.3f", bar, ratio, rtt/729)
		}
	}
	if !strings.Contains(svg, "podium bench wan --svg x.svg") || strings.Index(svg, ">middle<") > strings.Index(svg, ">far<") {
		t.Errorf("caption or room order wrong:\n%s", svg)
	}
}
