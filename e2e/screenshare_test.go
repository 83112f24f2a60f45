package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// shareRow is the inbound video row of a screen share, with its byte count.
type shareRow struct {
	Inbound
	BytesReceived int `json:"bytesReceived"`
}

// shareView is what a receiver's page shows of a screen share.
type shareView struct {
	Stage      string     `json:"stage"`      // who is on stage
	TileWidth  int        `json:"tileWidth"`  // the share tile's <video>.videoWidth; -1 without a tile
	Forwarded  bool       `json:"forwarded"`  // the share is in the forwarded set
	Inbound    []shareRow `json:"inbound"`    // rows of the share
	StageWidth float64    `json:"stageWidth"` // CSS width of the stage tile
}

func (b *Browser) shareView(share string) (shareView, error) {
	var v shareView
	err := b.eval(fmt.Sprintf(`(async () => {
		const id = %q;
		const tile = document.querySelector('.tile[data-participant-id="' + id + '"]');
		const video = tile ? tile.querySelector('video') : null;
		const st = await window.podium.stats();
		const stage = document.querySelector('.spotlight .tile');
		return {
			stage: window.podium.onStage() || '',
			tileWidth: tile ? (video ? video.videoWidth : 0) : -1,
			forwarded: (window.podium.forwarded() || []).includes(id),
			inbound: st.inbound.filter((r) => r.participantId === id),
			stageWidth: stage ? stage.getBoundingClientRect().width : 0,
		};
	})()`, share), &v)
	return v, err
}

func (v shareView) video() (shareRow, bool) {
	for _, r := range v.Inbound {
		if r.Kind == "video" {
			return r, true
		}
	}
	return shareRow{}, false
}

// click presses the element like a user (a trusted event: getDisplayMedia needs
// one).
func (b *Browser) click(selector string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.Click(chromedp.CSS(selector))); err != nil {
		b.t.Fatalf("%s: click %s: %v", b.name, selector, err)
	}
}

// Ann shares her (fake, 1920x1080) screen with the page's button: Bob and Cid
// each render it on stage at 1280 px wide or more while the camera tiles keep
// playing and showing the right people; Ann then stops it as the browser's
// "Stop sharing" bar would (the capture track ends) and the share disappears
// from both pages within 2 s, cameras still playing.
func TestScreenShare(t *testing.T) {
	srv := startServer(t)
	base := srv.URL() + "e2e-share?video=320x180&name="
	names := []string{"Ann", "Bob", "Cid"}
	browsers := map[string]*Browser{}
	people := map[string]who{}
	for i, n := range names {
		people[n] = who{Name: n, Colour: palette[i]}
		extra := []chromedp.ExecAllocatorOption{camera(t, palette[i], 320, 180)}
		if n == "Ann" {
			extra = append(extra, chromedp.Flag("auto-select-desktop-capture-source", "Entire screen"),
				chromedp.Flag("screen-info", "{1920x1080}"))
		}
		browsers[n] = launch(t, n, extra...)
		browsers[n].open(base + n)
	}
	for _, n := range names {
		b := browsers[n]
		within(t, n+" joined", 15*time.Second, func() (bool, string) {
			p := people[n]
			p.ID = b.id()
			people[n] = p
			return p.ID != "", "no participant id yet"
		})
	}
	others := func(n string) (ids []string, ws []who) {
		for _, o := range names {
			if o != n {
				ids, ws = append(ids, people[o].ID), append(ws, people[o])
			}
		}
		return ids, ws
	}
	for _, n := range names {
		ids, _ := others(n)
		within(t, n+" decodes both others", 20*time.Second, func() (bool, string) { return rising(browsers[n], ids) })
	}

	ann := browsers["Ann"]
	share := people["Ann"].ID + "-screen"
	ann.click("button.ctl.share")
	within(t, "Ann shares a 1920x1080 capture", 10*time.Second, func() (bool, string) {
		var s struct {
			Width   int    `json:"width"`
			Pressed string `json:"pressed"`
		}
		err := ann.eval(`(() => {
			const s = window.podium.conference.screenShare;
			const v = s ? s.getVideoTracks()[0] : null;
			return {width: v ? v.getSettings().width : 0, pressed: document.querySelector('button.ctl.share').getAttribute('aria-pressed')};
		})()`, &s)
		return err == nil && s.Width == 1920 && s.Pressed == "true", fmt.Sprintf("%+v %v", s, err)
	})
	start := time.Now()
	for _, n := range []string{"Bob", "Cid"} {
		b := browsers[n]
		within(t, n+" shows Ann's screen on stage at ≥ 1280 px", 20*time.Second, func() (bool, string) {
			v, err := b.shareView(share)
			if err != nil {
				return false, err.Error()
			}
			r, ok := v.video()
			return ok && v.Stage == share && v.TileWidth >= 1280 && r.FrameWidth >= 1280 && r.FramesDecoded > 0,
				fmt.Sprintf("%+v", v)
		})
		v, _ := b.shareView(share)
		r, _ := v.video()
		t.Logf("%s: share on stage %v after Ann's capture started (%.0f CSS px wide), decoded %dx%d, video %d px wide",
			n, time.Since(start).Round(time.Millisecond), v.StageWidth, r.FrameWidth, r.FrameHeight, v.TileWidth)
	}
	// The cameras keep playing beside the share, each tile still its person's.
	for _, n := range []string{"Bob", "Cid"} {
		ids, ws := others(n)
		within(t, n+" still decodes both cameras", 10*time.Second, func() (bool, string) { return rising(browsers[n], ids) })
		within(t, n+"'s camera tiles show who they say", 5*time.Second, func() (bool, string) { return showsWho(browsers[n], ws...) })
	}
	// What the share costs: frame rate and received rate over 3 s at Bob.
	v0, _ := browsers["Bob"].shareView(share)
	r0, _ := v0.video()
	time.Sleep(3 * time.Second)
	v1, _ := browsers["Bob"].shareView(share)
	r1, _ := v1.video()
	t.Logf("share at Bob: %dx%d, %.1f fps, %.0f kb/s", r1.FrameWidth, r1.FrameHeight,
		float64(r1.FramesDecoded-r0.FramesDecoded)/3, float64(r1.BytesReceived-r0.BytesReceived)*8/3/1000)

	// Ann stops from the browser's bar: the capture track ends.
	var stopped bool
	if err := ann.eval(`(() => {
		const v = window.podium.conference.screenShare.getVideoTracks()[0];
		v.stop();
		v.dispatchEvent(new Event('ended'));
		return window.podium.conference.screenShare === null;
	})()`, &stopped); err != nil || !stopped {
		t.Fatalf("Ann's page did not stop sharing when the capture ended: %v %v", stopped, err)
	}
	stop := time.Now()
	gone := map[string]time.Duration{}
	for len(gone) < 2 && time.Since(stop) < 5*time.Second {
		for _, n := range []string{"Bob", "Cid"} {
			if _, done := gone[n]; done {
				continue
			}
			v, err := browsers[n].shareView(share)
			if _, playing := v.video(); err == nil && v.TileWidth == -1 && !playing && !v.Forwarded && v.Stage != share {
				gone[n] = time.Since(stop)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, n := range []string{"Bob", "Cid"} {
		took, ok := gone[n]
		if !ok || took > 2*time.Second {
			v, _ := browsers[n].shareView(share)
			t.Fatalf("%s still shows Ann's share %v after it stopped: %+v", n, time.Since(stop).Round(time.Millisecond), v)
		}
		t.Logf("%s: share gone %v after it stopped", n, took.Round(time.Millisecond))
	}
	for _, n := range []string{"Bob", "Cid"} {
		ids, ws := others(n)
		within(t, n+" decodes both cameras after the share", 10*time.Second, func() (bool, string) { return rising(browsers[n], ids) })
		within(t, n+"'s tiles show who they say after the share", 5*time.Second, func() (bool, string) { return showsWho(browsers[n], ws...) })
	}
}
