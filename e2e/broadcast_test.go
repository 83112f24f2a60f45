package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/podium-sfu/podium/internal/clip"
	"github.com/podium-sfu/podium/internal/config"
	"github.com/podium-sfu/podium/internal/whipclient"
)

// resourceID is the participant id in a WHIP resource URL (/whip/<room>/<id>-<secret>).
func resourceID(resource string) string {
	last := resource[strings.LastIndex(resource, "/")+1:]
	id, _, _ := strings.Cut(last, "-")
	return id
}

// TestWHIPPublisherInChromium: a pion WHIP client publishing a 640x360 VP8
// clip is a participant a Chromium participant renders: its tile decodes
// 640x360 frames that keep coming and its audio arrives.
func TestWHIPPublisherInChromium(t *testing.T) {
	srv := startServer(t)
	viewer := launch(t, "Viewer", camera(t, palette[0], 320, 180), autoplay)
	viewer.join(srv.URL()+"e2e-whip?video=320x180&name=", "Viewer")
	v, err := clip.LoadVideo(clip.Video360p)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pub, err := whipclient.Publish(ctx, srv.URL()+"whip/e2e-whip?name=Broadcast", "", v)
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close(context.Background())
	id := resourceID(pub.Resource)
	took := within(t, "the viewer decodes the WHIP publisher's video and gets its audio", 20*time.Second, func() (bool, string) { return rising(viewer, []string{id}) })
	within(t, "the WHIP publisher's tile shows its 640x360 picture", 5*time.Second, func() (bool, string) {
		got, err := viewer.tileColours()
		if err != nil {
			return false, err.Error()
		}
		s, ok := got[id]
		return ok && s.Width == 640 && s.Height == 360 && s.Frames > 0, fmt.Sprintf("tiles %+v", got)
	})
	t.Logf("Chromium renders the WHIP publisher %s after %v", id, took.Round(time.Millisecond))
}

// playerScript is the whole WHEP player: a bare RTCPeerConnection, no Podium
// code. It offers recvonly audio and video, POSTs the offer once ICE
// gathering is complete, and plays what comes on a <video>.
const playerScript = `(async () => {
	const pc = new RTCPeerConnection();
	pc.addTransceiver('audio', {direction: 'recvonly'});
	pc.addTransceiver('video', {direction: 'recvonly'});
	const video = document.createElement('video');
	video.muted = true; video.autoplay = true; video.playsInline = true;
	video.width = 640; video.height = 360;
	document.body.appendChild(video);
	const stream = new MediaStream();
	pc.ontrack = (e) => { stream.addTrack(e.track); video.srcObject = stream; };
	await pc.setLocalDescription(await pc.createOffer());
	await new Promise((done) => {
		if (pc.iceGatheringState === 'complete') return done();
		pc.onicegatheringstatechange = () => pc.iceGatheringState === 'complete' && done();
	});
	const resp = await fetch('/whep/%s', {method: 'POST', headers: {'Content-Type': 'application/sdp'}, body: pc.localDescription.sdp});
	if (resp.status !== 201) throw new Error('WHEP: ' + resp.status + ' ' + await resp.text());
	await pc.setRemoteDescription({type: 'answer', sdp: await resp.text()});
	window.player = {pc, video, location: resp.headers.get('Location')};
	return true;
})()`

// playerSample is the colour of the middle of the player's picture, its size,
// and what its connection received.
type playerSample struct {
	R, G, B       float64
	Width, Height int
	Frames        int
	AudioPackets  int
	Tracks        int
}

const samplePlayer = `(async () => {
	const {pc, video: v} = window.player;
	const out = {Tracks: pc.getReceivers().filter(r => r.track && r.track.readyState === 'live').length};
	for (const r of (await pc.getStats()).values()) {
		if (r.type === 'inbound-rtp' && r.kind === 'audio') out.AudioPackets = r.packetsReceived;
		if (r.type === 'inbound-rtp' && r.kind === 'video') out.Frames = r.framesDecoded || 0;
	}
	if (v.readyState >= 2 && v.videoWidth) {
		const c = document.createElement('canvas');
		c.width = 32; c.height = 18;
		const g = c.getContext('2d', {willReadFrequently: true});
		const w = v.videoWidth, h = v.videoHeight;
		g.drawImage(v, w * 0.3, h * 0.3, w * 0.4, h * 0.4, 0, 0, c.width, c.height);
		const d = g.getImageData(0, 0, c.width, c.height).data;
		let r = 0, gr = 0, b = 0;
		for (let i = 0; i < d.length; i += 4) { r += d[i]; gr += d[i + 1]; b += d[i + 2]; }
		const n = d.length / 4;
		Object.assign(out, {R: r / n, G: gr / n, B: b / n, Width: w, Height: h});
	}
	return out;
})()`

// shows reports whether the player's picture is c's and still decoding, with
// audio arriving, over one audio and one video track.
func shows(p *Browser, c colour) (bool, string) {
	var a, b playerSample
	if err := p.eval(samplePlayer, &a); err != nil {
		return false, err.Error()
	}
	time.Sleep(500 * time.Millisecond)
	if err := p.eval(samplePlayer, &b); err != nil {
		return false, err.Error()
	}
	got, d := nearest(b.R, b.G, b.B)
	ok := b.Width > 0 && got == c && d <= maxColourDistance && b.Frames > a.Frames && b.AudioPackets > a.AudioPackets && b.Tracks == 2
	return ok, fmt.Sprintf("player shows rgb(%.0f,%.0f,%.0f) %dx%d (nearest %s at %.0f), frames %d→%d, audio packets %d→%d, live tracks %d; want %s",
		b.R, b.G, b.B, b.Width, b.Height, got.Name, d, a.Frames, b.Frames, a.AudioPackets, b.AudioPackets, b.Tracks, c.Name)
}

// TestWHEPPlayerFollowsTheSpeaker: a plain page with a bare RTCPeerConnection
// plays a room's stage over WHEP: the speaking participant's camera (A, red),
// then, when A falls silent and B (green) speaks, B's, on the same one video
// and one audio track.
func TestWHEPPlayerFollowsTheSpeaker(t *testing.T) {
	srv := startServerWith(t, func(*config.Config) {})
	base := srv.URL() + "e2e-whep?video=320x180&name="
	a := launch(t, "A", camera(t, palette[0], 320, 180), autoplay)
	a.withMicrophone(true)
	a.join(base, "A")
	b := launch(t, "B", camera(t, palette[1], 320, 180), autoplay)
	b.withMicrophone(false)
	b.join(base, "B")

	player := launch(t, "Player", autoplay)
	player.open(srv.URL() + "healthz") // any page of the server's origin: the player's fetch is same-origin
	var started bool
	if err := player.eval(fmt.Sprintf(playerScript, "e2e-whep"), &started); err != nil || !started {
		t.Fatalf("player: %v", err)
	}
	took := within(t, "the player shows A, the speaker", 20*time.Second, func() (bool, string) { return shows(player, palette[0]) })
	t.Logf("the WHEP player shows A (red) after %v", took.Round(time.Millisecond))

	a.speak(false)
	b.speak(true)
	took = within(t, "the player follows the speaker to B", 10*time.Second, func() (bool, string) { return shows(player, palette[1]) })
	t.Logf("the WHEP player switched to B (green) %v after the microphones switched", took.Round(time.Millisecond))

	var location string
	if err := player.eval(`window.player.location`, &location); err != nil || !strings.HasPrefix(location, "/whep/e2e-whep/") {
		t.Errorf("player's resource %q (%v), want under /whep/e2e-whep/", location, err)
	}
}
