package e2e

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/podium-sfu/podium/internal/config"
	"github.com/podium-sfu/podium/internal/server"
)

// decodesSized waits until b decodes new frames of id's video whose width
// passes ok (a busy box makes Chromium's encoder lower a 720p camera's sizes,
// so "large" and "small" are ranges here).
func decodesSized(t *testing.T, b *Browser, id, what string, ok func(width int) bool, timeout time.Duration) time.Duration {
	t.Helper()
	var prev *inboundVideo
	return within(t, fmt.Sprintf("%s decodes %s", b.name, what), timeout, func() (bool, string) {
		v, err := b.videoFrom(id)
		if err != nil {
			return false, err.Error()
		}
		fresh := prev != nil && v.FramesDecoded > prev.FramesDecoded && ok(v.FrameWidth)
		detail := fmt.Sprintf("last reading %+v, the one before %+v; %s", v, prev, b.downlink(id))
		prev = &v
		return fresh, detail
	})
}

// downlink is what the SFU last told b of its downlink (its `stats`): the
// estimate, and the encoding it forwards of id's video. A layer lower than
// asked for is the allocator's answer to the estimate.
func (b *Browser) downlink(id string) string {
	var st struct {
		Estimate  int `json:"estimate"`
		Allocated int `json:"allocated"`
		Videos    map[string]struct {
			Encoding  int  `json:"encoding"`
			Suspended bool `json:"suspended"`
		} `json:"videos"`
	}
	if err := b.eval(`window.podium.bandwidth()`, &st); err != nil {
		return fmt.Sprintf("the SFU's downlink stats: %v", err)
	}
	v, ok := st.Videos[id]
	return fmt.Sprintf("the SFU's downlink stats: estimate %d b/s, allocated %d b/s, forwards encoding %d of it (listed %v, suspended %v)",
		st.Estimate, st.Allocated, v.Encoding, ok, v.Suspended)
}

func (b *Browser) do(js string) {
	b.t.Helper()
	if err := b.eval(js+`; true`, nil); err != nil {
		b.t.Fatalf("%s: %s: %v", b.name, js, err)
	}
}

// Firefox (Debian's firefox-esr, headless, over WebDriver BiDi) in a room with
// two Chromiums, sharing the browsers between the checks:
//   - everyone decodes everyone (video frames and audio packets rising) and every
//     tile shows its participant's colour: Chromium cameras are coloured y4m
//     files, Firefox's is a magenta canvas (canvasCamera);
//   - a 640x360 camera publishes two encodings, q and h, in Chromium and in
//     Firefox, and the SFU switches viewers between them (Firefox's thumbnail
//     and stage of Other, Sender's of Firefox);
//   - Firefox receives simulcast switching from a 720p Chromium: small → large →
//     small, frame width following, no freeze over 1 s (getStats
//     totalFreezesDuration);
//   - Last N = 1 at the Firefox receiver: it decodes only the dominant speaker's
//     video and follows the speaker when another participant starts talking;
//   - nobody receiving Firefox's video pauses it, and it resumes;
//   - Firefox's signaling cut: it reconnects as itself and media flows again.
func TestFirefoxInAMixedRoom(t *testing.T) {
	firefoxPath(t) // skip (or fail in CI) before starting anything
	srv := startServer(t)
	base := srv.URL() + "e2e-firefox?name="

	sender := launch(t, "Sender", camera(t, red, 1280, 720), autoplay)
	sender.withMicrophone(true)
	other := launch(t, "Other", camera(t, green, 640, 360), autoplay)
	other.withMicrophone(false)
	fox := launchFirefox(t, "Firefox")
	fox.addScript(canvasCamera(magenta, 640, 360))
	fox.withMicrophone(false)

	s := who{Name: "Sender", ID: sender.join(base, "Sender"), Colour: red}
	o := who{Name: "Other", ID: other.join(base, "Other&video=640x360"), Colour: green}
	f := who{Name: "Firefox", ID: fox.join(base, "Firefox&video=640x360"), Colour: magenta}

	// Everyone decodes everyone, and every tile shows who it says.
	start := time.Now()
	defer iceConsentHeld(t, srv, start)
	within(t, "Firefox decodes both Chromiums", 20*time.Second, func() (bool, string) { return rising(fox, []string{s.ID, o.ID}) })
	within(t, "Sender decodes Firefox", 10*time.Second, func() (bool, string) { return rising(sender, []string{f.ID}) })
	within(t, "Other decodes Firefox", 10*time.Second, func() (bool, string) { return rising(other, []string{f.ID}) })
	t.Logf("everyone decodes everyone's video and receives their audio %v after the last join", time.Since(start).Round(time.Millisecond))
	within(t, "Firefox's tiles show the Chromiums", 5*time.Second, func() (bool, string) { return showsWho(fox, s, o) })
	within(t, "Sender's tile of Firefox shows Firefox", 5*time.Second, func() (bool, string) { return showsWho(sender, f) })
	within(t, "Other's tile of Firefox shows Firefox", 5*time.Second, func() (bool, string) { return showsWho(other, f) })
	t.Log("every tile shows its participant's colour, in Firefox and in both Chromiums")

	// A 640x360 camera gets two simulcast encodings, in either browser: a
	// thumbnail of Other receives its ½ (320x180), not the full stream. Firefox
	// publishes simulcast too: the SFU switches a viewer between its encodings
	// as the viewer enlarges and shrinks its tile.
	for _, b := range []*Browser{other, fox} {
		encs, err := b.encodings()
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := encs["f"]; ok || len(encs) != 2 || encs["q"].Kind == "" || encs["h"].Kind == "" {
			t.Fatalf("%s's video encodings for a 640x360 camera: %+v, want q and h", b.name, encs)
		}
	}
	decodesAt(t, fox, o.ID, 320, 180, 10*time.Second)
	t.Log("Other's and Firefox's 640x360 cameras publish q and h; Firefox's thumbnail of Other decodes 320x180")
	other.do(fmt.Sprintf(`window.podium.stage(%q)`, s.ID))
	sender.do(fmt.Sprintf(`window.podium.stage(%q)`, o.ID))
	decodesAt(t, sender, f.ID, 320, 180, 10*time.Second)
	sender.do(fmt.Sprintf(`window.podium.unstage(%q); window.podium.stage(%q)`, o.ID, f.ID))
	took := decodesAt(t, sender, f.ID, 640, 360, 10*time.Second)
	within(t, "Sender's large tile of Firefox shows Firefox", 3*time.Second, func() (bool, string) { return showsWho(sender, f) })
	t.Logf("Firefox's simulcast: Sender decodes its q (320x180), then its h (640x360) %v after staging it", took.Round(time.Millisecond))
	sender.do(fmt.Sprintf(`window.podium.unstage(%q); window.podium.stage(%q)`, f.ID, o.ID))
	took = decodesAt(t, sender, f.ID, 320, 180, 10*time.Second)
	t.Logf("and q again %v after unstaging it", took.Round(time.Millisecond))

	// Firefox receives simulcast switching: Sender small, large, small again.
	small := func(w int) bool { return w > 0 && w <= 320 }
	large := func(w int) bool { return w >= 960 }
	fox.do(fmt.Sprintf(`window.podium.stage(%q)`, o.ID))
	decodesSized(t, fox, s.ID, "Sender small (≤ 320 wide)", small, 10*time.Second)
	decodesAt(t, fox, o.ID, 640, 360, 5*time.Second) // Other's h, on stage
	within(t, "Firefox's small tile of Sender shows Sender", 3*time.Second, func() (bool, string) { return showsWho(fox, s) })
	fox.do(fmt.Sprintf(`window.podium.unstage(%q); window.podium.stage(%q)`, o.ID, s.ID))
	took = decodesSized(t, fox, s.ID, "Sender large (≥ 960 wide)", large, 5*time.Second)
	v, _ := fox.videoFrom(s.ID)
	t.Logf("Firefox: Sender large (%dx%d) %v after staging it", v.FrameWidth, v.FrameHeight, took.Round(time.Millisecond))
	within(t, "Firefox's large tile of Sender shows Sender", 3*time.Second, func() (bool, string) { return showsWho(fox, s) })
	noFreeze(t, fox, s.ID, 1500*time.Millisecond)
	fox.do(fmt.Sprintf(`window.podium.unstage(%q); window.podium.stage(%q)`, s.ID, o.ID))
	took = decodesSized(t, fox, s.ID, "Sender small again", small, 5*time.Second)
	t.Logf("Firefox: Sender small again %v after unstaging it", took.Round(time.Millisecond))
	noFreeze(t, fox, s.ID, 1500*time.Millisecond)

	// Last N = 1 at Firefox: only the dominant speaker's video, following the speaker.
	fox.do(fmt.Sprintf(`window.podium.unstage(%q); window.podium.setLastN(1)`, o.ID))
	within(t, "Firefox decodes only the speaker, Sender", 10*time.Second, decodesOnly(fox, s.ID))
	other.speak(true)
	sender.speak(false)
	// How fast the speaker is recognised is TestLastNFollowsTheSpeaker's to
	// time (here 0.8-2.6 s: a switch in the test speech's sentence pause waits
	// for the next sentence); this test is about what Firefox receives.
	took = within(t, "Firefox's forwarded video switches to the new speaker, Other", 4*time.Second, func() (bool, string) {
		var ids []string
		err := fox.eval(`window.podium.forwarded()`, &ids)
		return err == nil && len(ids) == 1 && ids[0] == o.ID, fmt.Sprintf("forwarded %v (%v), want [%s]", ids, err, o.ID)
	})
	t.Logf("Last N 1: Firefox's forwarded video followed the speaker %v after the microphones switched", took.Round(time.Millisecond))
	within(t, "Firefox decodes only Other", 3*time.Second, decodesOnly(fox, o.ID))
	within(t, "Firefox's tile of Other shows Other", 3*time.Second, func() (bool, string) { return showsWho(fox, o) })
	fox.do(`window.podium.setLastN(-1)`)

	// Nobody receives Firefox's video: it is paused, then resumed.
	sender.do(`window.podium.setLastN(0)`)
	other.do(`window.podium.setLastN(0)`)
	within(t, "Firefox told to pause", 5*time.Second, func() (bool, string) {
		var paused bool
		err := fox.eval(`window.podium.videoPaused()`, &paused)
		return err == nil && paused, fmt.Sprintf("paused=%v err=%v", paused, err)
	})
	within(t, "Firefox's outbound video stops", 6*time.Second, func() (bool, string) {
		kbps, err := fox.videoRate(2 * time.Second)
		return err == nil && kbps < 5, fmt.Sprintf("Firefox sends video at %d kb/s (%v)", kbps, err)
	})
	other.do(`window.podium.setLastN(-1)`)
	within(t, "Other decodes Firefox again", 10*time.Second, func() (bool, string) { return rising(other, []string{f.ID}) })
	t.Log("Firefox's video paused while nobody received it (~0 kb/s), resumed when Other did")

	// Firefox's signaling connection is cut: it comes back as itself.
	fox.do(`window.podium.conference.session.ws.close()`)
	cut := time.Now()
	within(t, "media flows again after Firefox's cut", 8*time.Second, func() (bool, string) {
		if ok, why := rising(fox, []string{o.ID}); !ok {
			return false, why
		}
		return rising(other, []string{f.ID})
	})
	t.Logf("Firefox reconnected; media flows both ways %v after the cut", time.Since(cut).Round(time.Millisecond))
	if id := fox.id(); id != f.ID {
		t.Errorf("Firefox's id after reconnect = %q, want %q (resume)", id, f.ID)
	}
	within(t, "Other's tile of Firefox shows Firefox after the reconnect", 3*time.Second, func() (bool, string) { return showsWho(other, f) })
	within(t, "Firefox's tiles show both Chromiums after the reconnect", 5*time.Second, func() (bool, string) { return showsWho(fox, s, o) })
	if tiles, err := fox.tiles(); err != nil || len(tiles) != 2 {
		t.Errorf("Firefox's tiles after the reconnect = %v (%v), want exactly two", tiles, err)
	}
}

// A new user's Firefox (default ICE prefs: no loopback candidates, host
// addresses as mDNS names) in a room of the default server, which announces
// every local address, loopback included: Firefox receives. Before, pion, the
// controlling agent of the subscribe connection, nominated the pair from its
// 127.0.0.1 to Firefox's LAN address, which Firefox never validates: Firefox's
// subscribe connection stayed checking and it saw nobody (issue 12).
func TestFirefoxWithDefaultICEPrefs(t *testing.T) {
	firefoxPath(t)
	if !hasLANAddress() {
		skipOrFail(t, "%s", "no non-loopback IPv4 address: Firefox without loopback candidates cannot reach the server")
	}
	srv := startServerWith(t, func(c *config.Config) { c.MediaIPs = nil }) // every local address, as `podium serve`
	base := srv.URL() + "e2e-firefox-ice?name="
	chrome := launch(t, "Chromium", camera(t, green, 320, 180), autoplay)
	fox := launchFirefox(t, "Firefox", "default-ice")
	fox.addScript(canvasCamera(magenta, 320, 180))
	c := who{Name: "Chromium", ID: chrome.join(base, "Chromium&video=320x180"), Colour: green}
	f := who{Name: "Firefox", ID: fox.join(base, "Firefox&video=320x180"), Colour: magenta}
	within(t, "Firefox decodes Chromium", 15*time.Second, func() (bool, string) { return rising(fox, []string{c.ID}) })
	within(t, "Chromium decodes Firefox", 10*time.Second, func() (bool, string) { return rising(chrome, []string{f.ID}) })
	within(t, "Firefox's tile of Chromium shows Chromium", 5*time.Second, func() (bool, string) { return showsWho(fox, c) })
}

func hasLANAddress() bool {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			return true
		}
	}
	return false
}

// iceConsentHeld checks, at the end of a test of at least 12 s since start
// with Chromium and Firefox in the room, that the data plane kept their
// connections' ICE consent: it answered their checks and they answered ours,
// and pion (which sends no keepalive pings now, and goes disconnected when it
// hears nothing of the peer for 8 s, seen within 8 more) never declared a
// connection disconnected.
func iceConsentHeld(t *testing.T, srv *server.Server, start time.Time) {
	if t.Failed() {
		return
	}
	took := time.Since(start)
	answered, sent, confirmed, lapses := srv.ICEConsent()
	t.Logf("ICE consent over %v: %d of the browsers' checks answered at the socket, %d of ours sent, %d answered; %d connections lapsed",
		took.Round(time.Second), answered, sent, confirmed, lapses)
	if took < 12*time.Second {
		t.Fatalf("ran %v: too short to see a connection lapse", took)
	}
	if lapses != 0 || answered == 0 || 2*confirmed < sent || confirmed == 0 {
		t.Error("the data plane did not keep the browsers' ICE consent")
	}
}
