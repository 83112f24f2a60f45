package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podium-sfu/podium/internal/config"
)

// gstreamer finds Debian's python3 with GStreamer's webrtcbin bindings; in CI
// a missing one fails instead of skipping.
func gstreamer(t *testing.T) string {
	t.Helper()
	const py = "/usr/bin/python3"
	err := exec.Command(py, "-c", `import gi; gi.require_version("GstWebRTC", "1.0"); gi.require_version("GstSdp", "1.0")
from gi.repository import Gst; Gst.init(None); assert Gst.ElementFactory.find("webrtcbin") and Gst.ElementFactory.find("vp8enc") and Gst.ElementFactory.find("opusenc")`).Run()
	if err == nil {
		return py
	}
	const need = "gstreamer1.0-plugins-bad gstreamer1.0-nice gstreamer1.0-plugins-good python3-gst-1.0 gir1.2-gst-plugins-bad-1.0"
	if os.Getenv("CI") != "" {
		t.Fatalf("GStreamer's webrtcbin is not installed (CI must: apt-get install -y %s): %v", need, err)
	}
	t.Skipf("GStreamer's webrtcbin is not installed (apt-get install -y %s)", need)
	return ""
}

// TestWHIPGStreamerInChromium: a publisher on a WebRTC stack other than pion
// — GStreamer's webrtcbin, driven by gstwhip.py, which POSTs its offer —
// publishes a 640x360 VP8 test pattern and an Opus tone into a room, and a
// Chromium participant decodes its video in its tile and receives its audio;
// the script's DELETE on SIGTERM takes it out of the room.
func TestWHIPGStreamerInChromium(t *testing.T) {
	py := gstreamer(t)
	// Media on every IPv4 address: libnice offers no loopback candidate, and
	// its checks from the host's address to 127.0.0.1 go unanswered here.
	srv := startServerWith(t, func(c *config.Config) { c.MediaIPs = nil })
	viewer := launch(t, "Viewer", camera(t, palette[0], 320, 180), autoplay)
	viewer.join(srv.URL()+"e2e-gst?video=320x180&name=", "Viewer")

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, "gstwhip.py", srv.URL()+"whip/e2e-gst?name=GStreamer")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	lines := bufio.NewScanner(out)
	var resource string
	for lines.Scan() {
		if r, ok := strings.CutPrefix(lines.Text(), "resource "); ok {
			resource = r
			break
		}
	}
	if resource == "" {
		t.Fatal("gstwhip.py ended without a resource: the server refused its offer (its stderr above says why)")
	}
	id := resourceID(resource)
	took := within(t, "the viewer decodes GStreamer's video and gets its audio", 20*time.Second, func() (bool, string) { return rising(viewer, []string{id}) })
	within(t, "GStreamer's tile shows its 640x360 picture", 5*time.Second, func() (bool, string) {
		got, err := viewer.tileColours()
		if err != nil {
			return false, err.Error()
		}
		s, ok := got[id]
		return ok && s.Width == 640 && s.Height == 360 && s.Frames > 0, fmt.Sprintf("tiles %+v", got)
	})
	t.Logf("Chromium renders the GStreamer WHIP publisher %s after %v", id, took.Round(time.Millisecond))

	_ = cmd.Process.Signal(syscall.SIGTERM) // the script DELETEs its resource
	within(t, "GStreamer's tile goes after its DELETE", 5*time.Second, func() (bool, string) {
		tiles, err := viewer.tiles()
		for _, t := range tiles {
			if t == id {
				return false, fmt.Sprintf("tiles %v (%v)", tiles, err)
			}
		}
		return err == nil, fmt.Sprint(err)
	})
}
