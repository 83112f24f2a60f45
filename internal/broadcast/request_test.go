package broadcast

import (
	"net/http"
	"strings"
	"testing"
)

// A WHIP offer as a browser or GStreamer sends it (trimmed): BUNDLE, Opus
// with the audio level extension, VP8 with simulcast RIDs.
const whipOffer = "v=0\r\n" +
	"o=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n" +
	"a=group:BUNDLE 0 1\r\n" +
	"a=fingerprint:sha-256 AA:BB:CC:DD:EE:FF:00:11:22:33:44:55:66:77:88:99:AA:BB:CC:DD:EE:FF:00:11:22:33:44:55:66:77:88:99\r\n" +
	"m=audio 9 UDP/TLS/RTP/SAVPF 111\r\nc=IN IP4 0.0.0.0\r\n" +
	"a=ice-ufrag:abcd\r\na=ice-pwd:abcdefghijklmnopqrstuvwx\r\na=setup:actpass\r\na=mid:0\r\n" +
	"a=extmap:1 urn:ietf:params:rtp-hdrext:ssrc-audio-level\r\n" +
	"a=sendonly\r\na=rtcp-mux\r\na=rtpmap:111 opus/48000/2\r\n" +
	"m=video 9 UDP/TLS/RTP/SAVPF 96\r\nc=IN IP4 0.0.0.0\r\n" +
	"a=ice-ufrag:abcd\r\na=ice-pwd:abcdefghijklmnopqrstuvwx\r\na=setup:actpass\r\na=mid:1\r\n" +
	"a=sendonly\r\na=rtcp-mux\r\na=rtpmap:96 VP8/90000\r\n" +
	"a=rid:q send\r\na=rid:h send\r\na=simulcast:send q;h\r\n"

var whepOffer = strings.ReplaceAll(whipOffer, "a=sendonly", "a=recvonly")

func TestCheckOffer(t *testing.T) {
	cases := []struct {
		name, ctype, body string
		kind              Kind
		status            int // 0: accepted
		says              string
		audio, video      bool
	}{
		{"WHIP offer", "application/sdp", whipOffer, WHIP, 0, "", true, true},
		{"content type with parameters", "application/sdp; charset=utf-8", whipOffer, WHIP, 0, "", true, true},
		{"WHEP offer", "application/sdp", whepOffer, WHEP, 0, "", true, true},
		{"sendrecv is fine for both", "application/sdp", strings.ReplaceAll(whipOffer, "a=sendonly", "a=sendrecv"), WHEP, 0, "", true, true},
		{"no direction means sendrecv", "application/sdp", strings.ReplaceAll(whipOffer, "a=sendonly\r\n", ""), WHIP, 0, "", true, true},
		{"audio only", "application/sdp", whipOffer[:strings.Index(whipOffer, "m=video")], WHIP, 0, "", true, false},
		{"rejected video section ignored", "application/sdp", strings.Replace(whipOffer, "m=video 9", "m=video 0", 1), WHIP, 0, "", true, false},
		{"JSON", "application/json", whipOffer, WHIP, http.StatusUnsupportedMediaType, "application/sdp", false, false},
		{"no content type", "", whipOffer, WHIP, http.StatusUnsupportedMediaType, "application/sdp", false, false},
		{"garbage content type", ";;;", whipOffer, WHEP, http.StatusUnsupportedMediaType, "application/sdp", false, false},
		{"too large", "application/sdp", whipOffer + strings.Repeat("a", MaxOfferBytes), WHIP, http.StatusRequestEntityTooLarge, "larger", false, false},
		{"empty", "application/sdp", " \r\n", WHIP, http.StatusBadRequest, "empty", false, false},
		{"not SDP", "application/sdp", "hello", WHIP, http.StatusBadRequest, "malformed SDP", false, false},
		{"no fingerprint", "application/sdp", strings.Replace(whipOffer, "a=fingerprint", "a=x-fingerprint", 1), WHIP, http.StatusBadRequest, "fingerprint", false, false},
		{"no ICE credentials", "application/sdp", strings.ReplaceAll(whipOffer, "a=ice-ufrag", "a=x-ice-ufrag"), WHIP, http.StatusBadRequest, "ICE", false, false},
		{"recvonly to WHIP", "application/sdp", whepOffer, WHIP, http.StatusBadRequest, "recvonly", false, false},
		{"sendonly to WHEP", "application/sdp", whipOffer, WHEP, http.StatusBadRequest, "sendonly", false, false},
		{"inactive", "application/sdp", strings.Replace(whipOffer, "a=sendonly", "a=inactive", 1), WHIP, http.StatusBadRequest, "inactive", false, false},
		{"H.264", "application/sdp", strings.ReplaceAll(whipOffer, "VP8/90000", "H264/90000"), WHIP, http.StatusBadRequest, "no VP8", false, false},
		{"no Opus", "application/sdp", strings.ReplaceAll(whipOffer, "opus/48000/2", "PCMU/8000"), WHIP, http.StatusBadRequest, "no opus", false, false},
		{"two videos", "application/sdp", whipOffer + whipOffer[strings.Index(whipOffer, "m=video"):], WHIP, http.StatusBadRequest, "more than one video", false, false},
		{"no media", "application/sdp", whipOffer[:strings.Index(whipOffer, "m=audio")], WHIP, http.StatusBadRequest, "no", false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o, err := CheckOffer(c.kind, c.ctype, []byte(c.body))
			if c.status == 0 {
				if err != nil {
					t.Fatalf("refused: %d %s", err.Status, err.Msg)
				}
				if o.Audio != c.audio || o.Video != c.video || o.SDP != c.body {
					t.Fatalf("offer %+v, want audio %v video %v", o, c.audio, c.video)
				}
				return
			}
			if err == nil || err.Status != c.status || !strings.Contains(strings.ToLower(err.Msg), strings.ToLower(c.says)) {
				t.Fatalf("got %v, want %d saying %q", err, c.status, c.says)
			}
		})
	}
}

// FuzzCheckOffer: any body is accepted or refused with a 4xx status and a
// message, never a panic; what is accepted has media and parses again.
func FuzzCheckOffer(f *testing.F) {
	f.Add(whipOffer, false)
	f.Add(whepOffer, true)
	f.Add("v=0\r\n", false)
	f.Add(strings.Replace(whipOffer, "m=video 9", "m=video 0", 1), false)
	f.Fuzz(func(t *testing.T, body string, whep bool) {
		kind := WHIP
		if whep {
			kind = WHEP
		}
		o, err := CheckOffer(kind, "application/sdp", []byte(body))
		if err != nil {
			if err.Status < 400 || err.Status > 499 || err.Msg == "" {
				t.Fatalf("refusal %d %q", err.Status, err.Msg)
			}
			return
		}
		if !o.Audio && !o.Video {
			t.Fatal("accepted an offer without media")
		}
		if _, err2 := CheckOffer(kind, "application/sdp", []byte(o.SDP)); err2 != nil {
			t.Fatalf("accepted once, refused again: %v", err2)
		}
	})
}
