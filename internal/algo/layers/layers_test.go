package layers

import (
	"math/rand"
	"testing"
)

func three(active ...bool) []Encoding {
	encs := []Encoding{
		{Width: 320, Height: 180, Bitrate: 150_000},
		{Width: 640, Height: 360, Bitrate: 500_000},
		{Width: 1280, Height: 720, Bitrate: 2_500_000},
	}
	for i := range encs {
		encs[i].Active = len(active) == 0 || active[i]
	}
	return encs
}

func TestChoose(t *testing.T) {
	cases := []struct {
		name   string
		encs   []Encoding
		want   Want
		budget int
		enc    int
	}{
		{"thumbnail by default", three(), Want{}, 0, 0},
		{"small tile", three(), Want{Width: 320, Height: 180}, 0, 0},
		{"medium tile", three(), Want{Width: 600, Height: 338}, 0, 1},
		{"slightly larger than h still h", three(), Want{Width: 700, Height: 394}, 0, 1},
		{"large tile", three(), Want{Width: 1280, Height: 720}, 0, 2},
		{"stage, even a smallish one", three(), Want{Width: 696, Height: 391, Stage: true}, 0, 2},
		{"stage without size", three(), Want{Stage: true}, 0, 2},
		{"stage, top inactive", three(true, true, false), Want{Stage: true}, 0, 1},
		{"stage, none active: the top", three(false, false, false), Want{Stage: true}, 0, 2},
		{"bigger than any: largest", three(), Want{Width: 1920, Height: 1080}, 0, 2},
		{"top inactive: best active", three(true, true, false), Want{Width: 1280, Height: 720}, 0, 1},
		{"only top active, thumbnail wanted", three(false, false, true), Want{Width: 320, Height: 180}, 0, 2},
		{"none active: the covering one", three(false, false, false), Want{Width: 640, Height: 360}, 0, 1},
		{"budget steps down", three(), Want{Width: 1280, Height: 720}, 1_000_000, 1},
		{"budget below everything keeps lowest", three(), Want{Width: 1280, Height: 720}, 50_000, 0},
		{"single encoding", []Encoding{{Active: true}}, Want{Width: 320, Height: 180}, 0, 0},
		{"unknown sizes use nominal", []Encoding{{Active: true}, {Active: true}, {Active: true}}, Want{Width: 640, Height: 360}, 0, 1},
		{"no encodings", nil, Want{}, 0, -1},
	}
	for _, c := range cases {
		if got := Choose(c.encs, c.want, c.budget); got.Encoding != c.enc {
			t.Errorf("%s: encoding %d, want %d", c.name, got.Encoding, c.enc)
		}
	}
}

// Property: the choice is active (when anything is), and never larger than needed.
func TestChooseProperties(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 10000; i++ {
		encs := three(rng.Intn(2) == 0, rng.Intn(2) == 0, rng.Intn(2) == 0)
		want := Want{Width: rng.Intn(2000), Height: rng.Intn(1200)}
		got := Choose(encs, want, 0).Encoding
		anyActive := encs[0].Active || encs[1].Active || encs[2].Active
		if anyActive && !encs[got].Active {
			t.Fatalf("%v %v: chose inactive %d", encs, want, got)
		}
		for j := 0; j < got; j++ {
			w, h := want.Width, want.Height
			if w <= 0 || h <= 0 {
				w, h = 320, 180
			}
			if encs[j].Active && encs[j].Width >= w*9/10 && encs[j].Height >= h*9/10 {
				t.Fatalf("%v %v: chose %d although %d covers", encs, want, got, j)
			}
		}
	}
}
