package bench

import (
	"math"
	"strings"
	"testing"

	"github.com/podium-sfu/podium/internal/load"
)

func TestHighestAndSaturationLine(t *testing.T) {
	step := func(k int, pps, loss float64, held bool) SaturationStep {
		r := ForwardResult{PacketsPerS: pps, CPUMicros: 20, XFloor: 2}
		r.Load.LossPercent = loss
		return SaturationStep{Copies: k, Result: r, Held: held}
	}
	steps := []SaturationStep{step(1, 6700, 0, true), step(2, 13400, 0.1, true), step(3, 15000, 2.5, false)}
	best, ok := Highest(steps)
	if !ok || best.Copies != 2 {
		t.Fatalf("highest %+v %v, want the 2-copy step (the 3-copy one lost 2.5 %%)", best, ok)
	}
	line := SaturationLine("meeting-8", steps)
	for _, want := range []string{"saturation_copies=2 ", "saturation_pkts_per_s=13400 ", "saturation_x_floor=2.00 ", "last_copies=3 ", "last_loss_pct=2.500 ", "saturated=true"} {
		if !strings.Contains(line, want) {
			t.Errorf("%q lacks %q", line, want)
		}
	}
	if _, ok := Highest(steps[2:]); ok {
		t.Error("a step that did not hold was picked")
	}
	if line := SaturationLine("x", steps[2:]); !strings.Contains(line, "saturation_copies=0 ") {
		t.Errorf("%q", line)
	}
}

// Copies of a scenario are rooms apart: each receiver expects only its own
// room's sources, and the nominal load is k times the scenario's.
func TestReplicate(t *testing.T) {
	sc, _ := load.StandardScenario(load.Meeting8)
	x3 := load.Replicate(sc, 3)
	if len(x3.Participants) != 24 || len(x3.Expected()) != 3*len(sc.Expected()) {
		t.Fatalf("%d participants, %d expectations", len(x3.Participants), len(x3.Expected()))
	}
	for _, e := range x3.Expected() {
		if e.Receiver[len(e.Receiver)-2:] != e.Source[len(e.Source)-2:] {
			t.Fatalf("%s expects %s from another room", e.Receiver, e.Source)
		}
	}
	p1, b1, _ := sc.Nominal(70)
	p3, b3, _ := x3.Nominal(70)
	if math.Abs(p3/(3*p1)-1) > 1e-9 || math.Abs(b3/(3*b1)-1) > 1e-9 {
		t.Errorf("nominal ×3: %.0f %.0f, want %.0f %.0f", p3, b3, 3*p1, 3*b1)
	}
	plan, err := NewFloorPlan(x3, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Receivers) != 24 || len(plan.Streams) != 48 {
		t.Errorf("floor plan of 3 meetings: %d receivers, %d streams", len(plan.Receivers), len(plan.Streams))
	}
}
