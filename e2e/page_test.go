package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// What the tests add to every page before its own scripts run (CDP
// Page.addScriptToEvaluateOnNewDocument), so that the client needs no test code:
// window.__podiumTest.pcs lists the page's peer connections (for raw getStats).
const pageScript = `(() => {
	const t = window.__podiumTest = window.__podiumTest || {};
	t.pcs = [];
	const Native = window.RTCPeerConnection;
	if (!Native) return;
	window.RTCPeerConnection = class extends Native {
		constructor(...args) { super(...args); t.pcs.push(this); }
	};
})()`

// microphoneScript replaces the page's microphone with a WebAudio source the
// test switches between speech and silence inside a live call
// (window.__podiumTest.speak(on)): the same track stays published, as with a
// person who starts or stops talking. The speech is a voiced harmonic sound
// cut into syllables (4 a second) grouped into sentences with short pauses; a
// faint 50 Hz hum is always there. %v: speaking at first; %v: the voice's
// fundamental frequency (Hz; harmonics 2, 3 and 5 times it).
const microphoneScript = `(() => {
	const t = window.__podiumTest = window.__podiumTest || {};
	let speaking = %v, gain = null, track = null;
	const f0 = %v;
	const rate = 48000;
	const makeTrack = () => {
		const ctx = new AudioContext({sampleRate: rate});
		const buf = ctx.createBuffer(1, 4 * rate, rate);
		const d = buf.getChannelData(0);
		const s = (f, x) => Math.sin(2 * Math.PI * f * x);
		for (let i = 0; i < d.length; i++) {
			const x = i / rate;
			const voice = 0.6 * (s(f0, x) + 0.6 * s(2 * f0, x) + 0.4 * s(3 * f0, x) + 0.2 * s(5 * f0, x)) / 2.2;
			d[i] = voice * (s(4, x) > -0.3 ? 1 : 0) * (s(0.25, x) > -0.7 ? 1 : 0);
		}
		const src = ctx.createBufferSource();
		src.buffer = buf;
		src.loop = true;
		gain = ctx.createGain();
		gain.gain.value = speaking ? 1 : 0;
		const hum = ctx.createOscillator();
		hum.frequency.value = 50;
		const humGain = ctx.createGain();
		humGain.gain.value = 0.002;
		const out = ctx.createMediaStreamDestination();
		src.connect(gain).connect(out);
		hum.connect(humGain).connect(out);
		src.start();
		hum.start();
		void ctx.resume();
		return out.stream.getAudioTracks()[0];
	};
	t.speak = (on) => {
		speaking = on;
		if (gain) gain.gain.setValueAtTime(on ? 1 : 0, gain.context.currentTime);
		return gain !== null;
	};
	const md = navigator.mediaDevices;
	if (!md) return;
	const native = md.getUserMedia.bind(md);
	md.getUserMedia = async (c) => {
		const stream = await native(c);
		if (c && c.audio) {
			for (const a of stream.getAudioTracks()) { stream.removeTrack(a); a.stop(); }
			track = track || makeTrack();
			stream.addTrack(track);
		}
		return stream;
	};
})()`

// autoplay lets WebAudio (withMicrophone) run without a user gesture: a launch option.
var autoplay = chromedp.Flag("autoplay-policy", "no-user-gesture-required")

// addScript runs js in every document the browser loads from now on.
func (b *Browser) addScript(js string) {
	b.t.Helper()
	if b.page != nil {
		if err := b.page.addScript(js); err != nil {
			b.t.Fatalf("%s: add page script: %v", b.name, err)
		}
		return
	}
	ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
	defer cancel()
	err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
		_, err := cdp.Call(ctx, t, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: js})
		return err
	}))
	if err != nil {
		b.t.Fatalf("%s: add page script: %v", b.name, err)
	}
}

// withMicrophone gives the browser the switchable microphone (speak); call it
// before open, on a browser launched with autoplay.
func (b *Browser) withMicrophone(speaking bool) {
	b.withVoice(speaking, 140)
}

// withVoice is withMicrophone with a voice of fundamental f0 Hz, to tell
// voices apart at a receiver (slotPitchScript).
func (b *Browser) withVoice(speaking bool, f0 float64) {
	b.addScript(fmt.Sprintf(microphoneScript, speaking, f0))
}

// speak switches the browser's microphone to speech (true) or silence.
func (b *Browser) speak(on bool) {
	b.t.Helper()
	var ok bool
	if err := b.eval(fmt.Sprintf(`window.__podiumTest.speak(%v)`, on), &ok); err != nil || !ok {
		b.t.Fatalf("%s: switch the microphone to speaking=%v: ok=%v err=%v", b.name, on, ok, err)
	}
}

// A participant as the tests know it: name, id and the colour of its camera.
type who struct {
	Name   string
	ID     string
	Colour colour
}

func (w who) String() string { return fmt.Sprintf("%s (%s, %s)", w.Name, w.ID, w.Colour.Name) }

// tileSample is the mean colour of the centre of the video a tile shows.
type tileSample struct {
	R, G, B       float64
	Width, Height int // of the decoded picture
	Frames        int // frames the <video> presented so far
}

// tileColours samples every remote tile's <video> that has a picture: the frame
// it shows is drawn onto a canvas and the middle 40 % (both ways) averaged.
func (b *Browser) tileColours() (map[string]tileSample, error) {
	var out map[string]tileSample
	err := b.eval(`(() => {
		const out = {};
		for (const tile of document.querySelectorAll('.tile[data-participant-id]:not(.local)')) {
			const v = tile.querySelector('video');
			if (!v || v.hidden || v.readyState < 2 || !v.videoWidth) continue;
			const c = document.createElement('canvas');
			c.width = 32; c.height = 18;
			const g = c.getContext('2d', {willReadFrequently: true});
			const w = v.videoWidth, h = v.videoHeight;
			g.drawImage(v, w * 0.3, h * 0.3, w * 0.4, h * 0.4, 0, 0, c.width, c.height);
			const d = g.getImageData(0, 0, c.width, c.height).data;
			let r = 0, gr = 0, b = 0;
			for (let i = 0; i < d.length; i += 4) { r += d[i]; gr += d[i + 1]; b += d[i + 2]; }
			const n = d.length / 4;
			const q = v.getVideoPlaybackQuality ? v.getVideoPlaybackQuality() : null;
			out[tile.dataset.participantId] = {R: r / n, G: gr / n, B: b / n, Width: w, Height: h,
				Frames: q ? q.totalVideoFrames : 0};
		}
		return out;
	})()`, &out)
	return out, err
}

// showsWho reports whether each participant in want has a tile on b whose
// picture is that participant's colour (the nearest palette colour, within
// maxColourDistance), and describes every tile otherwise.
func showsWho(b *Browser, want ...who) (bool, string) {
	got, err := b.tileColours()
	if err != nil {
		return false, err.Error()
	}
	names := map[string]string{}
	for _, w := range want {
		names[w.ID] = w.Name
	}
	ok := true
	var missing []string
	for _, w := range want {
		s, found := got[w.ID]
		if !found {
			ok = false
			missing = append(missing, w.Name)
			continue
		}
		if c, d := nearest(s.R, s.G, s.B); c != w.Colour || d > maxColourDistance {
			ok = false
		}
	}
	if ok {
		return true, ""
	}
	var tiles []string
	for id, s := range got {
		c, d := nearest(s.R, s.G, s.B)
		label := id
		if n, known := names[id]; known {
			label = n
		}
		tiles = append(tiles, fmt.Sprintf("%s's tile shows rgb(%.0f,%.0f,%.0f) %dx%d, nearest %s at %.0f", label, s.R, s.G, s.B, s.Width, s.Height, c.Name, d))
	}
	sort.Strings(tiles)
	var expect []string
	for _, w := range want {
		expect = append(expect, w.Name+": "+w.Colour.Name)
	}
	detail := fmt.Sprintf("%s: want tiles %s (within %d); %s", b.name, strings.Join(expect, ", "), maxColourDistance, strings.Join(tiles, "; "))
	if len(missing) > 0 {
		detail += fmt.Sprintf("; no picture in the tiles of %v", missing)
	}
	return false, detail
}
