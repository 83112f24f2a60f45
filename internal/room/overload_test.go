package room

import (
	"testing"

	"github.com/podium-sfu/podium/internal/algo/layers"
	"github.com/podium-sfu/podium/internal/algo/overload"
)

// The overload ceiling lowers what a receiver asks for, never raises it.
func TestShedCeiling(t *testing.T) {
	none := Settings{}
	c360 := Settings{Shed: &overload.Cap{LastN: 4, MaxHeight: 360}}
	c180 := Settings{Shed: &overload.Cap{LastN: 0, MaxHeight: 180}}
	nCases := []struct {
		st     Settings
		n, got int
	}{{none, 8, 8}, {none, -1, -1}, {c360, 8, 4}, {c360, 2, 2}, {c360, -1, 4}, {c180, 8, 0}}
	for _, tc := range nCases {
		if got := tc.st.capN(tc.n); got != tc.got {
			t.Errorf("cap %+v: Last N %d became %d, want %d", tc.st.Shed, tc.n, got, tc.got)
		}
	}
	stage := layers.Want{Width: 1280, Height: 720, Stage: true}
	wCases := []struct {
		st   Settings
		want layers.Want
		got  layers.Want
	}{
		{none, stage, stage},
		{c360, stage, layers.Want{Width: 640, Height: 360}},
		{c360, layers.Want{Width: 480, Height: 270}, layers.Want{Width: 480, Height: 270}},
		{c180, layers.Want{Width: 640, Height: 480}, layers.Want{Width: 240, Height: 180}},
		{c180, layers.Want{Stage: true}, layers.Want{Width: 320, Height: 180}},
		{c180, layers.Want{}, layers.Want{}}, // a thumbnail already
	}
	for _, tc := range wCases {
		if got := tc.st.capWant(tc.want); got != tc.got {
			t.Errorf("cap %+v: want %+v became %+v, expected %+v", tc.st.Shed, tc.want, got, tc.got)
		}
	}
	// What the layer choice makes of it: the top of three encodings no more.
	encs := []layers.Encoding{{Width: 320, Height: 180, Active: true}, {Width: 640, Height: 360, Active: true}, {Width: 1280, Height: 720, Active: true}}
	for _, tc := range []struct {
		st  Settings
		enc int
	}{{none, 2}, {c360, 1}, {c180, 0}} {
		if got := layers.Choose(encs, tc.st.capWant(stage), 0).Encoding; got != tc.enc {
			t.Errorf("cap %+v: stage video on encoding %d, want %d", tc.st.Shed, got, tc.enc)
		}
	}
}
