package server

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/client"
	"github.com/podium-sfu/podium/internal/clip"
	"github.com/podium-sfu/podium/internal/whipclient"
)

func loadClip(t *testing.T, name string) *clip.Video {
	t.Helper()
	v, err := clip.LoadVideo(name)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestWHIPPublisherIsAParticipant: a pion WHIP client publishing a clip
// becomes a participant named by ?name=; a browser-like participant receives
// its audio and video, and DELETE takes it out of the room.
func TestWHIPPublisherIsAParticipant(t *testing.T) {
	srv := startServer(t, Options{})
	viewer := dial(t, srv, "whip", "Viewer", false)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pub, err := whipclient.Publish(ctx, srv.URL()+"whip/whip?name=OBS", "", loadClip(t, clip.Video360p))
	if err != nil {
		t.Fatal(err)
	}
	var id string
	waitFor(t, viewer, "the WHIP publisher joins", 5*time.Second, func(s *client.State) bool {
		for _, p := range s.Participants {
			if p.Name == "OBS" {
				id = p.ID
			}
		}
		return id != ""
	})
	waitFor(t, viewer, "the WHIP publisher's audio and video arrive", 10*time.Second, receiving(id))
	if !strings.Contains(pub.Resource, "/whip/whip/") {
		t.Errorf("resource %q is not under /whip/<room>/", pub.Resource)
	}
	if err := pub.Close(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, viewer, "the WHIP publisher leaves after DELETE", 5*time.Second, func(s *client.State) bool {
		_, in := s.Participants[id]
		return !in
	})
}

// TestWHEPFollowsTheSpeaker: a WHEP player of a room with two WHIP publishers
// (640x360 and 320x180 clips) gets one video and one audio track showing the
// dominant speaker, and the other's picture once the other speaks, on the same
// SSRC with continuous sequence numbers.
func TestWHEPFollowsTheSpeaker(t *testing.T) {
	srv := startServer(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	big, err := whipclient.Publish(ctx, srv.URL()+"whip/stage?name=Big", "", loadClip(t, clip.Video360p))
	if err != nil {
		t.Fatal(err)
	}
	defer big.Close(ctx)
	small, err := whipclient.Publish(ctx, srv.URL()+"whip/stage?name=Small", "", loadClip(t, clip.Video180p))
	if err != nil {
		t.Fatal(err)
	}
	defer small.Close(ctx)
	big.SetSpeaking(true)
	player, err := whipclient.Play(ctx, srv.URL()+"whep/stage", "")
	if err != nil {
		t.Fatal(err)
	}
	defer player.Close(ctx)
	onStage := func(what string, w int) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for {
			s := player.Stats()
			if s.Width == w && time.Since(s.LastKey) < 10*time.Second && s.VideoPackets > 0 {
				t.Logf("%s: stage shows %dx%d (video packets %d, audio %d, keyframes %d, seq jumps %d)", what, s.Width, s.Height, s.VideoPackets, s.AudioPackets, s.Keyframes, s.SeqJumps)
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: stage shows %dx%d, want width %d (%+v)", what, s.Width, s.Height, w, s)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	onStage("Big speaks", 640)
	big.SetSpeaking(false)
	small.SetSpeaking(true)
	onStage("Small speaks", 320)
	before := player.Stats().VideoPackets
	time.Sleep(time.Second)
	s := player.Stats()
	if s.VideoPackets-before < 20 {
		t.Errorf("stage video stalled after the switch: %d packets in 1 s", s.VideoPackets-before)
	}
	if s.Tracks != 2 || len(s.SSRCs) != 1 || s.AudioPackets < 50 {
		t.Errorf("want one audio and one video track on one SSRC with audio flowing: %d tracks, video SSRCs %v, %d audio packets", s.Tracks, s.SSRCs, s.AudioPackets)
	}
	if s.SeqJumps > 0 {
		t.Errorf("the stage's sequence numbers jumped %d times: the switch must continue them", s.SeqJumps)
	}
}

// offerSDP is a complete pion offer: sendonly (WHIP) or recvonly (WHEP) audio
// and video.
func offerSDP(t *testing.T, dir webrtc.RTPTransceiverDirection) string {
	t.Helper()
	pc, err := webrtc.NewPeerConnection(webrtc.Configuration{})
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	for _, k := range []webrtc.RTPCodecType{webrtc.RTPCodecTypeAudio, webrtc.RTPCodecTypeVideo} {
		if _, err := pc.AddTransceiverFromKind(k, webrtc.RTPTransceiverInit{Direction: dir}); err != nil {
			t.Fatal(err)
		}
	}
	offer, err := pc.CreateOffer(nil)
	if err != nil {
		t.Fatal(err)
	}
	return offer.SDP
}

// TestBroadcastHTTPErrors: bad WHIP and WHEP requests get the HTTP status RFC
// 9725 and docs/broadcast.md give them, with a text body saying why; a good one
// gets 201 with Location and ETag, its PATCH 405, its DELETE 200, then 404.
func TestBroadcastHTTPErrors(t *testing.T) {
	srv := startServerWith(t, Options{}, withKeys)
	exp := time.Now().Add(time.Hour)
	good := mint(t, "r", "alice", pubSub, exp)
	send := offerSDP(t, webrtc.RTPTransceiverDirectionSendonly)
	recv := offerSDP(t, webrtc.RTPTransceiverDirectionRecvonly)
	do := func(method, path, token, ctype, body string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL()+strings.TrimPrefix(path, "/"), strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	cases := []struct {
		name, method, path, token, ctype, body string
		status                                 int
		says                                   string
	}{
		{"no token", "POST", "/whip/r", "", "application/sdp", send, 401, "requires a token"},
		{"forged token", "POST", "/whip/r", good + "x", "application/sdp", send, 401, "token rejected"},
		{"expired token", "POST", "/whip/r", mint(t, "r", "alice", pubSub, time.Now().Add(-time.Hour)), "application/sdp", send, 401, "expired"},
		{"token for another room", "POST", "/whip/r", mint(t, "other", "alice", pubSub, exp), "application/sdp", send, 403, "for room"},
		{"no publish permission", "POST", "/whip/r", mint(t, "r", "alice", subOnly, exp), "application/sdp", send, 403, "publish permission"},
		{"no subscribe permission", "POST", "/whep/r", mint(t, "r", "alice", pubOnly, exp), "application/sdp", recv, 403, "subscribe permission"},
		{"wrong content type", "POST", "/whip/r", good, "application/json", send, 415, "application/sdp"},
		{"no content type", "POST", "/whep/r", good, "", recv, 415, "application/sdp"},
		{"malformed SDP", "POST", "/whip/r", good, "application/sdp", "v=0\r\nthis is not SDP\r\n", 400, "malformed SDP"},
		{"empty body", "POST", "/whip/r", good, "application/sdp", "", 400, "empty"},
		{"WHEP offer to WHIP", "POST", "/whip/r", good, "application/sdp", recv, 400, "recvonly"},
		{"WHIP offer to WHEP", "POST", "/whep/r", good, "application/sdp", send, 400, "sendonly"},
		{"H.264 only", "POST", "/whip/r", good, "application/sdp", strings.ReplaceAll(send, "VP8/90000", "H264/90000"), 400, "no VP8"},
		{"too large", "POST", "/whip/r", good, "application/sdp", send + strings.Repeat("a=x-pad:0123456789\r\n", 4000), 413, "larger than"},
		{"bad room name", "POST", "/whip/no%20spaces", good, "application/sdp", send, 404, "not a room name"},
		{"DELETE unknown resource", "DELETE", "/whip/r/p0-0", "", "", "", 404, "no such resource"},
		{"PATCH unknown resource", "PATCH", "/whep/r/p0-0", good, "application/trickle-ice-sdpfrag", "a=end-of-candidates\r\n", 404, "no such resource"},
		{"GET", "GET", "/whip/r", good, "", "", 404, "no such WHIP endpoint"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, body := do(c.method, c.path, c.token, c.ctype, c.body)
			if resp.StatusCode != c.status || !strings.Contains(body, c.says) {
				t.Errorf("%s %s: %d %q, want %d saying %q", c.method, c.path, resp.StatusCode, body, c.status, c.says)
			}
			if c.status == 401 && resp.Header.Get("WWW-Authenticate") == "" {
				t.Errorf("401 without WWW-Authenticate")
			}
		})
	}
	for _, kind := range []struct{ path, offer string }{{"/whip/r", send}, {"/whep/r", recv}} {
		resp, body := do("POST", kind.path, good, "application/sdp", kind.offer)
		loc := resp.Header.Get("Location")
		if resp.StatusCode != 201 || !strings.HasPrefix(loc, kind.path+"/") || resp.Header.Get("ETag") == "" ||
			resp.Header.Get("Content-Type") != "application/sdp" || !strings.Contains(body, "a=candidate:") {
			t.Fatalf("POST %s: %d, Location %q, ETag %q, Content-Type %q, body %q", kind.path, resp.StatusCode, loc,
				resp.Header.Get("ETag"), resp.Header.Get("Content-Type"), body)
		}
		if resp, _ := do("PATCH", loc, good, "application/trickle-ice-sdpfrag", "a=end-of-candidates\r\n"); resp.StatusCode != 405 {
			t.Errorf("PATCH %s: %d, want 405 (no trickle)", loc, resp.StatusCode)
		}
		if resp, _ := do("DELETE", loc, good, "", ""); resp.StatusCode != 200 {
			t.Errorf("DELETE %s: %d, want 200", loc, resp.StatusCode)
		}
		if resp, _ := do("DELETE", loc, good, "", ""); resp.StatusCode != 404 {
			t.Errorf("second DELETE %s: %d, want 404", loc, resp.StatusCode)
		}
	}
}
