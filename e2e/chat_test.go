package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chatWatch makes b note when each chat text first appears in its chat log
// (Date.now() of the mutation), so that delivery is timed on the page itself.
const chatWatch = `(() => {
	const t = window.__podiumTest = window.__podiumTest || {};
	t.chatSeen = {};
	const log = document.querySelector('ol.chat-log');
	if (!log) return false;
	const note = () => {
		for (const li of log.querySelectorAll('li.chat-message')) {
			const text = li.querySelector('.chat-text').textContent;
			if (!(text in t.chatSeen)) t.chatSeen[text] = Date.now();
		}
	};
	new MutationObserver(note).observe(log, {childList: true});
	note();
	return true;
})()`

// chatItem is one rendered chat message as the page shows it.
type chatItem struct {
	Name, Text string
	From       string
	Children   int  // elements inside the message text (must be none)
	Own        bool // rendered as our own
}

func (b *Browser) chatItems() ([]chatItem, error) {
	var out []chatItem
	err := b.eval(`Array.from(document.querySelectorAll('ol.chat-log > li.chat-message')).map(li => ({
		Name: li.querySelector('.chat-name').textContent,
		Text: li.querySelector('.chat-text').textContent,
		From: li.dataset.from,
		Children: li.querySelector('.chat-text').children.length,
		Own: li.classList.contains('own'),
	}))`, &out)
	return out, err
}

// sendChat types text into the chat box and presses Enter, as a user would;
// it returns Date.now() on the page just before.
func (b *Browser) sendChat(text string) int64 {
	b.t.Helper()
	var at int64
	js := fmt.Sprintf(`(() => {
		const input = document.querySelector('textarea[name=chat-text]');
		input.focus();
		input.value = %q;
		const at = Date.now();
		input.dispatchEvent(new KeyboardEvent('keydown', {key: 'Enter', bubbles: true}));
		return input.value === '' ? at : -1;
	})()`, text)
	if err := b.eval(js, &at); err != nil || at < 0 {
		b.t.Fatalf("%s: send chat %q: at=%d err=%v", b.name, text, at, err)
	}
	return at
}

// joinRoom opens the room page with the participant's own camera and waits for its id.
func joinRoom(t *testing.T, url string, p *who, extra ...chromedp.ExecAllocatorOption) *Browser {
	t.Helper()
	b := launch(t, p.Name, append([]chromedp.ExecAllocatorOption{camera(t, p.Colour, 320, 180)}, extra...)...)
	b.open(url + p.Name)
	within(t, p.Name+" joined", 15*time.Second, func() (bool, string) {
		p.ID = b.id()
		return p.ID != "", "no participant id yet"
	})
	return b
}

// Chat in real browsers: Ann's message reaches Bob and Cid within 1 s (timed on
// their pages), markup in a message is shown as its literal text and makes no
// element, a late joiner (Dee) gets the history and Ann's raised hand.
func TestChatInTheBrowser(t *testing.T) {
	srv := startServer(t)
	base := srv.URL() + "e2e-chat?video=320x180&name="
	ann, bob, cid, dee := &who{Name: "Ann", Colour: red}, &who{Name: "Bob", Colour: green}, &who{Name: "Cid", Colour: blue}, &who{Name: "Dee", Colour: magenta}
	browsers := map[string]*Browser{}
	for _, p := range []*who{ann, bob, cid} {
		browsers[p.Name] = joinRoom(t, base, p)
	}
	for _, n := range []string{"Bob", "Cid"} {
		var ok bool
		if err := browsers[n].eval(chatWatch, &ok); err != nil || !ok {
			t.Fatalf("%s: watch the chat log: %v %v", n, ok, err)
		}
	}

	const plain = "Hello from Ann 👋"
	const hostile = `<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2"> & <b>bold</b>`
	for _, text := range []string{plain, hostile} {
		sent := browsers["Ann"].sendChat(text)
		for _, n := range []string{"Bob", "Cid"} {
			b := browsers[n]
			var seen int64
			within(t, n+" shows Ann's message", 5*time.Second, func() (bool, string) {
				if err := b.eval(fmt.Sprintf(`window.__podiumTest.chatSeen[%q] || 0`, text), &seen); err != nil {
					return false, err.Error()
				}
				return seen > 0, "not in the chat log yet"
			})
			took := time.Duration(seen-sent) * time.Millisecond
			if took > time.Second {
				t.Errorf("%s showed %q %v after Ann sent it, want within 1 s", n, text, took)
			}
			t.Logf("%s showed Ann's %.20q %v after she pressed Enter", n, text, took)
		}
	}

	// Markup is text: the rendered text is the literal, no element was made from
	// it, and nothing of it ran.
	for _, n := range []string{"Ann", "Bob", "Cid"} {
		items, err := browsers[n].chatItems()
		if err != nil || len(items) != 2 {
			t.Fatalf("%s: chat log %+v (%v), want Ann's two messages", n, items, err)
		}
		h := items[1]
		if h.Text != hostile || h.Children != 0 || h.From != ann.ID || !strings.HasPrefix(h.Name, "Ann") || h.Own != (n == "Ann") {
			t.Errorf("%s renders the markup message as %+v, want its literal text, no child element, from %s", n, h, ann.ID)
		}
		var made struct{ Elements, Pwned int }
		if err := browsers[n].eval(`({Elements: document.querySelectorAll('.chat-panel script, .chat-panel img, .chat-panel b').length, Pwned: window.__pwned || 0})`, &made); err != nil || made.Elements != 0 || made.Pwned != 0 {
			t.Errorf("%s: elements made from the message %d, script ran %d (%v)", n, made.Elements, made.Pwned, err)
		}
	}

	// Ann raises her hand: Bob's tile of her shows it.
	if err := browsers["Ann"].eval(`document.querySelector('button.hand').click(), true`, nil); err != nil {
		t.Fatal(err)
	}
	within(t, "Bob sees Ann's hand", 2*time.Second, func() (bool, string) {
		var up bool
		err := browsers["Bob"].eval(fmt.Sprintf(`!!document.querySelector('.tile[data-participant-id=%q].hand-raised')`, ann.ID), &up)
		return up && err == nil, fmt.Sprint("no raised hand on Ann's tile ", err)
	})

	// Dee joins late: the history, in order, and Ann's raised hand.
	browsers["Dee"] = joinRoom(t, base, dee)
	within(t, "Dee sees the history", 3*time.Second, func() (bool, string) {
		items, err := browsers["Dee"].chatItems()
		if err != nil {
			return false, err.Error()
		}
		ok := len(items) == 2 && items[0].Text == plain && items[1].Text == hostile && items[1].Children == 0 &&
			items[0].From == ann.ID && strings.HasPrefix(items[0].Name, "Ann")
		return ok, fmt.Sprintf("chat log %+v", items)
	})
	within(t, "Dee sees Ann's hand raised", 3*time.Second, func() (bool, string) {
		var up bool
		err := browsers["Dee"].eval(fmt.Sprintf(`!!document.querySelector('.tile[data-participant-id=%q].hand-raised') && !!document.querySelector('ul.people li[data-participant-id=%q] .hand')`, ann.ID, ann.ID), &up)
		return up && err == nil, fmt.Sprint("no raised hand for Ann ", err)
	})
}

// threeCameras gives the browser Chromium's own fake cameras (no file):
// fake_device_0 (I420) and fake_device_2 (MJPEG) both show a green picture of
// slightly different shades, too close to tell apart reliably after VP8;
// fake_device_1 is a Y16 (depth) camera whose frames Chromium's encoder does
// not take (switching to it stalls the video: not a camera to test with).
var threeCameras = chromedp.Flag("use-fake-device-for-media-stream", "fps=30,device-count=3")

// publishState is what would change if a device switch renegotiated or rejoined.
type publishState struct {
	ID      string
	PCs     int    // peer connections the page made
	SDP     string // the publish connection's local description
	Audio   string // label of the published microphone
	Video   string // label of the published camera
	Senders int    // RTP senders with a track on the publish connection
}

func (b *Browser) publishState() (publishState, error) {
	var s publishState
	err := b.eval(`(() => {
		const pcs = window.__podiumTest.pcs, pub = pcs[pcs.length - 2];
		const senders = pub.getSenders().filter(s => s.track);
		const label = k => (senders.find(s => s.track.kind === k) || {track: {label: ''}}).track.label;
		return {ID: window.podium.id() || '', PCs: pcs.length, SDP: pub.localDescription ? pub.localDescription.sdp : '',
			Audio: label('audio'), Video: label('video'), Senders: senders.length};
	})()`, &s)
	return s, err
}

// chooseDevice picks the option labelled label in the in-call devices panel's
// select name (camera, mic), as a user would.
func (b *Browser) chooseDevice(name, label string) {
	b.t.Helper()
	within(b.t, b.name+" lists its "+name+"s", 5*time.Second, func() (bool, string) {
		var ok bool
		err := b.eval(fmt.Sprintf(`(() => {
			const panel = document.querySelector('section.devices-panel');
			if (panel.hidden) document.querySelector('button.devices-toggle').click();
			const sel = panel.querySelector('select[name=%s]');
			const opt = Array.from(sel.options).find(o => o.textContent === %q);
			if (!opt) return false;
			if (sel.value !== opt.value) { sel.value = opt.value; sel.dispatchEvent(new Event('change')); }
			return true;
		})()`, name, label), &ok)
		return ok && err == nil, fmt.Sprint("no option ", label, " ", err)
	})
}

// A camera and microphone switch in the call (devices panel) keeps the session:
// same participant id, same peer connections, no new publish offer, the same
// simulcast encodings; the sender publishes the new device and the receiver
// keeps decoding fresh frames (a new track that delivers nothing would stall
// them, as fake_device_1 does).
func TestDeviceSwitchKeepsTheSession(t *testing.T) {
	srv := startServer(t)
	base := srv.URL() + "e2e-devices?video=320x180&name="
	rae := &who{Name: "Rae", Colour: red}
	rb := joinRoom(t, base, rae)

	// Sam comes through the pre-join screen: a live preview, a moving level
	// meter, every device listed; joins muted.
	sam := launch(t, "Sam", threeCameras, autoplay)
	sam.open(srv.URL() + "e2e-devices?video=640x360")
	within(t, "Sam's pre-join screen previews and lists the devices", 10*time.Second, func() (bool, string) {
		var p struct {
			Width, Level, Cameras, Mics int
			Form                        bool
		}
		err := sam.eval(`(() => { const v = document.querySelector('section.prejoin video.preview');
			return {Width: v ? v.videoWidth : 0, Level: Number(document.querySelector('section.prejoin .level-meter').getAttribute('aria-valuenow') || 0),
				Cameras: document.querySelectorAll('section.prejoin select[name=camera] option').length,
				Mics: document.querySelectorAll('section.prejoin select[name=mic] option').length,
				Form: document.querySelector('form') === document.querySelector('form.join-form')}; })()`, &p)
		return err == nil && p.Width > 0 && p.Level > 0 && p.Cameras == 3 && p.Mics >= 2 && p.Form, fmt.Sprintf("%+v %v", p, err)
	})
	if err := sam.eval(`(() => { document.querySelector('input[name=name]').value = 'Sam';
		document.querySelector('input[name=join-muted]').click();
		document.querySelector('form').requestSubmit(); return true })()`, nil); err != nil {
		t.Fatal(err)
	}
	var samID string
	within(t, "Sam joined from the pre-join screen", 15*time.Second, func() (bool, string) { samID = sam.id(); return samID != "", "no id" })
	within(t, "Sam joined muted", 5*time.Second, func() (bool, string) {
		var muted bool
		err := rb.eval(fmt.Sprintf(`!!document.querySelector('.tile[data-participant-id=%q].audio-muted')`, samID), &muted)
		return muted && err == nil, fmt.Sprint("Rae does not show Sam muted ", err)
	})
	var addr string
	if err := sam.eval(`location.pathname + location.search`, &addr); err != nil || addr != "/e2e-devices?name=Sam&video=640x360" {
		t.Errorf("address after joining %q (%v), want /e2e-devices?name=Sam&video=640x360", addr, err)
	}

	var last tileSample
	shows := func(what string) {
		t.Helper()
		took := within(t, "Rae decodes Sam's "+what, 8*time.Second, func() (bool, string) {
			if ok, why := rising(rb, []string{samID}); !ok {
				return false, why
			}
			got, err := rb.tileColours()
			last = got[samID]
			return err == nil && last.Width > 0, fmt.Sprintf("Sam's tile has no picture %v", err)
		})
		t.Logf("Rae decodes Sam's %s after %v: rgb(%.0f,%.0f,%.0f) %dx%d", what, took.Round(time.Millisecond), last.R, last.G, last.B, last.Width, last.Height)
	}
	shows("first camera")
	before, err := sam.publishState()
	if err != nil || before.SDP == "" || before.Senders != 2 || before.Video != "fake_device_0" {
		t.Fatalf("Sam's publish state %+v (%v)", before, err)
	}
	rids := func() []string {
		var out []string
		if err := sam.eval(`(() => { const pcs = window.__podiumTest.pcs; return pcs[pcs.length - 2].getSenders().find(s => s.track && s.track.kind === 'video').getParameters().encodings.map(e => e.rid || ''); })()`, &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	ridsBefore := rids()

	sam.chooseDevice("camera", "fake_device_2")
	within(t, "Sam publishes the second camera", 5*time.Second, func() (bool, string) {
		s, err := sam.publishState()
		return err == nil && s.Video == "fake_device_2", fmt.Sprintf("%+v %v", s, err)
	})
	shows("second camera")
	sam.chooseDevice("mic", "Fake Audio Input 2")
	within(t, "Sam publishes the second microphone", 5*time.Second, func() (bool, string) {
		s, err := sam.publishState()
		return err == nil && s.Audio == "Fake Audio Input 2", fmt.Sprintf("%+v %v", s, err)
	})
	if err := sam.eval(`document.querySelector('button.mic').click(), true`, nil); err != nil { // unmute
		t.Fatal(err)
	}
	shows("second camera with the second microphone") // rising() checks audio too
	sam.chooseDevice("camera", "fake_device_0")
	shows("first camera again")

	after, err := sam.publishState()
	if err != nil {
		t.Fatal(err)
	}
	if after.ID != before.ID || after.PCs != before.PCs || after.SDP != before.SDP || after.Senders != 2 || after.Video != "fake_device_0" {
		t.Errorf("after the switches Sam's publish state is %+v, before %+v: want the same id, connections and offer", after, before)
	}
	if got := rids(); strings.Join(got, ",") != strings.Join(ridsBefore, ",") {
		t.Errorf("Sam's video encodings %v after the switches, %v before", got, ridsBefore)
	}
	t.Logf("same id %s, %d peer connections, publish offer unchanged, encodings %v", after.ID, after.PCs, ridsBefore)
	if tiles, err := rb.tiles(); err != nil || len(tiles) != 1 || tiles[0] != samID {
		t.Errorf("Rae's tiles %v (%v), want only Sam's %s", tiles, err, samID)
	}
}
