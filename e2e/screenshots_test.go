package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/podium-sfu/podium/internal/auth"
	"github.com/podium-sfu/podium/internal/load"
)

// TestScreenshots writes the README's pictures of each view, as PNGs, into
// the directory $PODIUM_SCREENSHOTS (skipped without it):
//
//	PODIUM_SCREENSHOTS=$PWD/docs/screenshots go test -count=1 -run TestScreenshots ./e2e/
//
// A room of six: four synthetic publishers (podium load's pre-encoded clips),
// Kim (Chromium, a coloured camera, sharing a fake 1920x1080 screen) and Sam
// (Chromium, 1440x900), whose page is photographed: the join page, speaker
// view, grid view, the chat panel, and Kim's screen share on stage.
func TestScreenshots(t *testing.T) {
	dir := os.Getenv("PODIUM_SCREENSHOTS")
	if dir == "" {
		t.Skip("set PODIUM_SCREENSHOTS to a directory (docs/screenshots) to take the README's screenshots")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	srv, key := devServerWithKey(t)
	const roomName = "standup"
	tok, err := auth.Sign(key, auth.Claims{Room: roomName, Permissions: auth.Permissions{Publish: true}, Expires: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	var specs []load.ParticipantSpec
	for _, name := range []string{"Ada", "Grace", "Linus", "Margaret"} {
		specs = append(specs, load.ParticipantSpec{Name: name, Audio: true, Video: load.VideoSimulcast})
	}
	ctx, cancel := context.WithCancel(context.Background())
	run, err := load.Start(ctx, load.Config{URL: "ws" + srv.URL()[len("http"):] + "ws", Room: roomName, Token: tok,
		Participants: specs, Speech: load.SpeechRealistic, Seed: 3})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { run.Close(); cancel() })

	base := srv.URL() + roomName + "?video=640x360&name="
	kim := launch(t, "Kim", camera(t, palette[1], 640, 360), autoplay,
		chromedp.Flag("auto-select-desktop-capture-source", "Entire screen"), chromedp.Flag("screen-info", "{1920x1080}"))
	kim.join(base, "Kim")
	sam := launch(t, "Sam", camera(t, palette[0], 640, 360), autoplay, chromedp.WindowSize(1440, 900))

	shot := func(name string) {
		t.Helper()
		time.Sleep(500 * time.Millisecond) // let a frame or two paint
		cctx, ccancel := context.WithTimeout(sam.ctx, 10*time.Second)
		defer ccancel()
		png, err := chromedp.Run(cctx, chromedp.CaptureScreenshot())
		if err != nil {
			t.Fatalf("screenshot %s: %v", name, err)
		}
		path := filepath.Join(dir, name+".png")
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s (%d bytes)", path, len(png))
	}
	waitFor := func(what, js string) {
		t.Helper()
		within(t, what, 15*time.Second, func() (bool, string) {
			var ok bool
			err := sam.eval(js, &ok)
			var state string
			_ = sam.eval(`[...document.querySelectorAll('.tile')].map(t => (t.getAttribute('aria-label') || '?') + ' [' + t.className + '] q=' +
				(t.querySelector('.quality') ? t.querySelector('.quality').outerHTML.slice(0, 80) : '-')).join('; ')`, &state)
			return err == nil && ok, fmt.Sprint(err, " ", state)
		})
	}

	// The join page (the pre-join screen where there is one).
	sam.open(srv.URL() + roomName)
	waitFor("the join page", `!!document.querySelector('form')`)
	time.Sleep(time.Second) // camera preview, if any
	shot("join")

	// Speaker view: everyone's video playing, quality badges in.
	sam.join(base, "Sam")
	waitFor("five remote videos playing", `document.querySelectorAll('.tile:not(.local) video').length === 5 &&
		[...document.querySelectorAll('.tile:not(.local):not(.not-forwarded) video')].every(v => v.videoWidth > 0)`)
	waitFor("quality badges", `document.querySelectorAll('.tile .quality:not([hidden])').length >= 5`)
	shot("speaker-view")

	sam.press("g")
	waitFor("grid view", `document.querySelector('.gallery').dataset.layout === 'grid' &&
		[...document.querySelectorAll('.grid-tiles .tile:not(.local) video')].every(v => v.videoWidth > 0)`)
	time.Sleep(2 * time.Second) // layers settle at the tiles' size
	shot("grid-view")
	sam.press("g")

	if sam.has("button.chat-toggle") {
		sam.clickOn("button.chat-toggle")
		for _, m := range []struct {
			b    *Browser
			text string
		}{{kim, "Morning! Sharing the release checklist in a minute."}, {sam, "Sounds good — <b>no HTML</b> here, just text."}} {
			if err := m.b.eval(fmt.Sprintf(`window.podium.conference.sendChat(%q), true`, m.text), nil); err != nil {
				t.Logf("chat: %v", err)
			}
		}
		time.Sleep(time.Second)
		shot("chat")
	} else {
		t.Log("no chat button on the page: no chat screenshot")
	}

	if kim.has("button.ctl.share") {
		kim.clickOn("button.ctl.share") // a trusted click: getDisplayMedia needs one
		waitFor("Kim's screen on stage", `(() => { const v = document.querySelector('.spotlight .tile.screen video'); return !!v && v.videoWidth >= 1280 })()`)
		time.Sleep(2 * time.Second)
		shot("screen-share")
	} else {
		t.Log("no share button on the page: no screen share screenshot")
	}
}

func (b *Browser) has(selector string) bool {
	var ok bool
	_ = b.eval(fmt.Sprintf(`!!document.querySelector(%q)`, selector), &ok)
	return ok
}

// clickOn clicks the element as a user would (CDP mouse events).
func (b *Browser) clickOn(selector string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Click(chromedp.CSS(selector))); err != nil {
		b.t.Fatalf("%s: click %s: %v", b.name, selector, err)
	}
}
