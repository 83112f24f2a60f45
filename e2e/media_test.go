package e2e

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"
)

// Fake cameras that say who they are: each participant's camera shows its own
// saturated colour, with a moving, noisy test pattern along the top so that the
// encoder works at realistic rates (at 320x180 about 360 kb/s, as with
// Chromium's own fake camera; flat colour alone encodes to ~50 kb/s), and the
// receiving page's tiles are sampled to tell whose video each one shows
// (tileColours, showsWho). Chromium sends all three simulcast layers for
// cameras of at least 960x540.

// A colour is a camera's background, in RGB.
type colour struct {
	Name    string
	R, G, B int
}

// Far apart in RGB (≥ 160) and saturated, so that the YUV 4:2:0 round trip
// and VP8 at the lowest layer (a few tens of units at most) cannot turn one
// into another.
var (
	red     = colour{"red", 220, 40, 40}
	green   = colour{"green", 40, 190, 60}
	blue    = colour{"blue", 50, 70, 220}
	magenta = colour{"magenta", 210, 50, 200}
	palette = []colour{red, green, blue, magenta}
)

// maxColourDistance is how far (RGB, Euclidean) a tile's centre may be from its
// camera's colour: under a third of the smallest distance between two colours
// (measured through VP8 at 320x180: 2).
const maxColourDistance = 50

func (c colour) hex() string { return fmt.Sprintf("0x%02X%02X%02X", c.R, c.G, c.B) }

func (c colour) distance(r, g, b float64) float64 {
	dr, dg, db := r-float64(c.R), g-float64(c.G), b-float64(c.B)
	return math.Sqrt(dr*dr + dg*dg + db*db)
}

// nearest is the palette colour closest to (r, g, b) and its distance.
func nearest(r, g, b float64) (colour, float64) {
	best, bestD := palette[0], math.Inf(1)
	for _, c := range palette {
		if d := c.distance(r, g, b); d < bestD {
			best, bestD = c, d
		}
	}
	return best, bestD
}

// mediaDir holds this run's generated camera files (TestMain removes it).
var mediaDir struct {
	once sync.Once
	path string
	err  error
	mu   sync.Mutex // serialises generation; files are made once per run
}

func mediaFile(t *testing.T, name string, args ...string) string {
	t.Helper()
	mediaDir.once.Do(func() { mediaDir.path, mediaDir.err = os.MkdirTemp("", "podium-e2e-media-") })
	if mediaDir.err != nil {
		t.Fatal(mediaDir.err)
	}
	mediaDir.mu.Lock()
	defer mediaDir.mu.Unlock()
	out := filepath.Join(mediaDir.path, name)
	if _, err := os.Stat(out); err == nil {
		return out
	}
	ffmpeg, err := exec.LookPath("ffmpeg")
	if err != nil {
		const why = "ffmpeg not installed (apt-get install -y ffmpeg): it makes the fake cameras' files"
		if os.Getenv("CI") != "" {
			t.Fatal(why)
		}
		t.Skip(why)
	}
	tmp := out + ".part" + filepath.Ext(out)
	cmd := exec.Command(ffmpeg, append(append([]string{"-hide_banner", "-loglevel", "error"}, args...), "-y", tmp)...)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg %s: %v\n%s", name, err, msg)
	}
	if err := os.Rename(tmp, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestMain(m *testing.M) {
	if os.Getenv(nodeEnv) != "" { // a node process of TestFailoverInTheBrowser
		os.Exit(runNode())
	}
	code := m.Run()
	if mediaDir.path != "" {
		_ = os.RemoveAll(mediaDir.path)
	}
	os.Exit(code)
}

// camera is a launch option: the browser's fake camera plays one second of
// c at width×height, 30 fps, in a loop. The centre (sampled by tileColours) is
// flat c; the test pattern, with temporal noise, crosses the top sixth at half
// the width a second.
func camera(t *testing.T, c colour, width, height int) chromedp.ExecAllocatorOption {
	t.Helper()
	pw, ph := width/4, height/6
	graph := fmt.Sprintf("color=c=%s:s=%dx%d:r=30:d=1[bg];testsrc2=s=%dx%d:r=30:d=1,noise=alls=8:allf=t[fg];"+
		"[bg][fg]overlay=x='mod(t*%d,%d)':y=0",
		c.hex(), width, height, pw, ph, width/2, width-pw)
	file := mediaFile(t, fmt.Sprintf("%s-%dx%d.y4m", c.Name, width, height),
		"-f", "lavfi", "-i", graph, "-pix_fmt", "yuv420p")
	return chromedp.Flag("use-file-for-fake-video-capture", file)
}

// noisyCamera is a high-entropy camera, as real sensors give: c's background
// and a test pattern (ffmpeg's testsrc2, itself animated) 1.5 times as wide as
// the frame and half as high across its middle, swinging left and right by a
// quarter of the width every two seconds, with temporal noise (strength 24 of
// 255, new every frame) over the whole picture. Two seconds, looped seamlessly
// apart from the pattern's own clock. Keyframes and inter frames both cost far more than camera's at the
// same size (the noise cannot be predicted from the frame before); the
// picture's mean colour stays c away from the pattern, in the top and bottom
// quarters.
func noisyCamera(t *testing.T, c colour, width, height int) chromedp.ExecAllocatorOption {
	t.Helper()
	file := mediaFile(t, noisyCameraName(c, width, height), "-f", "lavfi", "-i", noisyCameraGraph(c, width, height), "-pix_fmt", "yuv420p")
	return chromedp.Flag("use-file-for-fake-video-capture", file)
}

func noisyCameraName(c colour, width, height int) string {
	return fmt.Sprintf("noisy-%s-%dx%d.y4m", c.Name, width, height)
}

// noisyCameraGraph is noisyCamera's ffmpeg filter graph: the content tests
// that use it state.
func noisyCameraGraph(c colour, width, height int) string {
	pw, ph := width*3/2, height/2
	return fmt.Sprintf("color=c=%s:s=%dx%d:r=30:d=2[bg];testsrc2=s=%dx%d:r=30:d=2[fg];"+
		"[bg][fg]overlay=x='-%d-%d*cos(PI*t)':y=%d,noise=alls=24:allf=t",
		c.hex(), width, height, pw, ph, width/4, width/4, height/4)
}

// The palette is far enough apart for maxColourDistance: each colour, shifted
// by up to the threshold, is still nearest to itself, and no two are within
// three thresholds of each other.
func TestPaletteSeparation(t *testing.T) {
	for i, c := range palette {
		for _, o := range palette[i+1:] {
			if d := c.distance(float64(o.R), float64(o.G), float64(o.B)); d < 3*maxColourDistance {
				t.Errorf("%s and %s are %.0f apart, want at least %d", c.Name, o.Name, d, 3*maxColourDistance)
			}
		}
		shift := float64(maxColourDistance) / math.Sqrt(3)
		if got, d := nearest(float64(c.R)+shift, float64(c.G)-shift, float64(c.B)+shift); got != c || d > maxColourDistance+0.5 {
			t.Errorf("%s shifted by %d: nearest %s at %.1f", c.Name, maxColourDistance, got.Name, d)
		}
	}
}
