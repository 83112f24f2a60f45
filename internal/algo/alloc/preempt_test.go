package alloc

import (
	"testing"
	"time"
)

// A share started while a camera plays at its top layer on a budget for
// about one: the camera is lowered at once, the share climbs after the dwell
// and keeps its top layer; without Preempts the camera keeps what it holds
// and the share stays on its lowest step.
func TestSharePreemptsTheCamera(t *testing.T) {
	single := func(rate int) []Layer {
		return []Layer{{Width: 1280, Height: 720, Active: true, Bitrate: [3]int{rate * 4 / 10, rate * 6 / 10, rate}}}
	}
	for _, preempts := range []bool{true, false} {
		a := New(DefaultConfig())
		camera := Source{ID: "cam", Priority: 1, Layers: single(290_000), Want: stage}
		got := a.Allocate(t0, 450_000, 0, []Source{camera})
		if got[0].MaxTemporal != 2 {
			t.Fatalf("the camera alone: %+v", got[0])
		}
		share := Source{ID: "share", Priority: 0, Layers: single(290_000), Want: stage, Preempts: preempts}
		var out []Allocation
		for now := t0.Add(time.Second); now.Before(t0.Add(10 * time.Second)); now = now.Add(100 * time.Millisecond) {
			out = a.Allocate(now, 450_000, 0, []Source{share, camera})
		}
		sh, cam := out[0], out[1]
		if preempts && (sh.Suspended || sh.MaxTemporal != 2 || cam.MaxTemporal == 2) {
			t.Errorf("preempting share: share %+v, camera %+v; want the share on its top step", sh, cam)
		}
		if !preempts && (sh.MaxTemporal == 2 || cam.MaxTemporal != 2) {
			t.Errorf("without Preempts: share %+v, camera %+v; want the camera to keep its top step", sh, cam)
		}
		if sh.Bitrate+cam.Bitrate > 450_000 {
			t.Errorf("preempts=%v: allocated %d + %d over the 450 kb/s budget", preempts, sh.Bitrate, cam.Bitrate)
		}
	}
}
