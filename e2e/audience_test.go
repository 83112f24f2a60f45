package e2e

import (
	"testing"
	"time"
)

// audienceProbe counts what the page asks of the browser that an audience page
// must not: camera or microphone, and peer connections (an audience page makes
// one, to receive).
const audienceProbe = `(() => {
	window.__audience = {gum: 0, pcs: 0};
	const gum = navigator.mediaDevices.getUserMedia.bind(navigator.mediaDevices);
	navigator.mediaDevices.getUserMedia = (c) => { window.__audience.gum++; return gum(c); };
	const PC = window.RTCPeerConnection;
	window.RTCPeerConnection = function (...args) { window.__audience.pcs++; return new PC(...args); };
	window.RTCPeerConnection.prototype = PC.prototype;
	Object.setPrototypeOf(window.RTCPeerConnection, PC);
})()`

// TestAudiencePage: a page opened with role=audience joins receive-only: it
// never asks for camera or microphone, makes only the subscribe peer
// connection (the server has no publish one for it), shows the publisher's
// camera in the publisher's colour, says it is watching as audience, and shows
// no microphone or camera buttons; the publisher's page gives it no tile.
func TestAudiencePage(t *testing.T) {
	srv := startServer(t)
	ann := launch(t, "Ann", camera(t, red, 320, 180))
	ann.open(srv.URL() + "hall?video=320x180&name=Ann")
	within(t, "Ann joined", 15*time.Second, func() (bool, string) { return ann.id() != "", "no participant id" })
	annReceiving := func() int {
		r, ok := srv.Hub().Room("hall")
		if !ok {
			t.Fatal("no room")
		}
		st, _ := r.Stats(time.Now())
		for _, p := range st.Participants {
			if p.ID == ann.id() {
				return p.Receiving
			}
		}
		t.Fatal("Ann is not in the room")
		return 0
	}
	alone := annReceiving() // her audio slots, if the room has them

	vic := launch(t, "Vic")
	vic.addScript(audienceProbe)
	vic.open(srv.URL() + "hall?name=Vic&role=audience")
	within(t, "Vic joined", 15*time.Second, func() (bool, string) { return vic.id() != "", "no participant id" })
	annWho := who{Name: "Ann", ID: ann.id(), Colour: red}
	within(t, "Vic's tile of Ann shows Ann", 20*time.Second, func() (bool, string) { return showsWho(vic, annWho) })

	var page struct {
		Gum, PCs           int
		Audience, Note     bool
		MicShown, CamShown bool
		Outbound           int
	}
	if err := vic.eval(`(async () => {
		const shown = (sel) => { const e = document.querySelector(sel); return !!e && !e.hidden; };
		const st = await window.podium.stats();
		return {Gum: window.__audience.gum, PCs: window.__audience.pcs,
			Audience: document.querySelector('.room')?.classList.contains('audience') ?? false,
			Note: shown('.viewer-note'), MicShown: shown('button.mic'), CamShown: shown('button.cam'),
			Outbound: (st.outbound ?? []).length};
	})()`, &page); err != nil {
		t.Fatal(err)
	}
	if page.Gum != 0 || page.PCs != 1 || page.Outbound != 0 {
		t.Errorf("the audience page asked for camera/microphone %d times, made %d peer connections (want 1: subscribe) and sends %d streams",
			page.Gum, page.PCs, page.Outbound)
	}
	if !page.Audience || !page.Note || page.MicShown || page.CamShown {
		t.Errorf("the audience page: marked audience %v, note shown %v, mic button %v, camera button %v", page.Audience, page.Note, page.MicShown, page.CamShown)
	}

	r, ok := srv.Hub().Room("hall")
	if !ok {
		t.Fatal("no room")
	}
	st, _ := r.Stats(time.Now())
	for _, p := range st.Participants {
		switch p.ID {
		case vic.id():
			if p.Permissions.Publish || len(p.Publishing) != 0 {
				t.Errorf("Vic at the server: permissions %+v, publishing %d tracks", p.Permissions, len(p.Publishing))
			}
		case ann.id():
			if p.Receiving != alone {
				t.Errorf("Ann receives %d streams, %d before Vic joined: the audience costs her something", p.Receiving, alone)
			}
		}
	}
	tiles, err := ann.tiles()
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range tiles {
		if id == vic.id() {
			t.Errorf("Ann's page has a tile for the audience member Vic: %v", tiles)
		}
	}
}
