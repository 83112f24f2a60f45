package e2e

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/podium-sfu/podium/internal/config"
)

// A two-party call between Firefox and Chromium goes direct too: each shows
// the other's colour from the direct connection, each sends from a candidate
// of its own that is not relayed to one of the other's, and the SFU forwards
// no video between them.
func TestP2PFirefoxAndChromium(t *testing.T) {
	firefoxPath(t)
	srv := startServerWith(t, func(c *config.Config) { c.P2P = true })
	const roomName = "e2e-p2p-firefox"
	base := srv.URL() + roomName + "?video=320x180&name="
	chrome := launch(t, "Chromium", camera(t, green, 320, 180), autoplay)
	chrome.withMicrophone(true)
	fox := launchFirefox(t, "Firefox")
	fox.addScript(canvasCamera(magenta, 320, 180))
	fox.withMicrophone(true)
	c := who{Name: "Chromium", ID: chrome.join(base, "Chromium"), Colour: green}
	f := who{Name: "Firefox", ID: fox.join(base, "Firefox"), Colour: magenta}
	joined := time.Now()

	a := chrome.inPhase(t, "direct", 30*time.Second)
	b := fox.inPhase(t, "direct", 10*time.Second)
	t.Logf("direct after %v", time.Since(joined).Round(time.Millisecond))
	// 10 s: CI once saw no picture of Firefox on Chromium 5 s after going
	// direct. Not reproduced in 10 runs under two busy loops (in the 4 timed,
	// each showed the other within 0.1 s). A failure now says what each
	// direct connection carried and what each tile plays.
	cf := within(t, "Chromium shows Firefox", 10*time.Second, func() (bool, string) { return showsWhoDirect(chrome, fox, f) })
	fc := within(t, "Firefox shows Chromium", 10*time.Second, func() (bool, string) { return showsWhoDirect(fox, chrome, c) })
	t.Logf("once direct: Chromium showed Firefox within %v, Firefox showed Chromium %v later", cf.Round(time.Millisecond), fc.Round(time.Millisecond))
	// Each side reports the pair it sends on. On a host with IPv4 and IPv6
	// the two need not name the same pair: CI read Chromium sending on IPv6
	// and Firefox on IPv4 for the whole 10 s of an earlier form of this check,
	// which waited for them to agree (both pairs had succeeded; which browser
	// moved off the nominated one the stats do not say). Direct is each
	// sending from a candidate of its own that is not relayed to one of the
	// other's.
	sendsTo := func(x, y p2pInfo) bool {
		return x.Remote != "" && slices.Contains(x.Locals, x.Local) && slices.Contains(y.Locals, x.Remote)
	}
	within(t, "direct pairs join the two browsers", 10*time.Second, func() (bool, string) {
		var err error
		if a, err = chrome.p2p(); err != nil {
			return false, err.Error()
		}
		if b, err = fox.p2p(); err != nil {
			return false, err.Error()
		}
		return sendsTo(a, b) && sendsTo(b, a), fmt.Sprintf("Chromium %s→%s (own %v), Firefox %s→%s (own %v)",
			a.Local, a.Remote, a.Locals, b.Local, b.Remote, b.Locals)
	})
	if videoPPS, _, _ := forwarding(t, srv, roomName, 3*time.Second); videoPPS >= 30 {
		t.Fatalf("P2P mode: the SFU forwards %.1f video packets/s, want < 30", videoPPS)
	}
	t.Logf("Chromium %s ↔ Firefox %s, both showing the other directly", a.Local, b.Local)
}
