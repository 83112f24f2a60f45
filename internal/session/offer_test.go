package session

import (
	"testing"

	"github.com/podium-sfu/podium/internal/peer"
)

const offerHead = "v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n"

func TestSendingTracks(t *testing.T) {
	tests := []struct {
		name  string
		offer string
		want  int
	}{
		{"audio and video", offerHead + "m=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=sendonly\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\na=sendrecv\r\n", 2},
		{"direction defaults to sendrecv", offerHead + "m=audio 9 UDP/TLS/RTP/SAVPF 111\r\n", 1},
		{"simulcast video is one track", offerHead + "m=video 9 UDP/TLS/RTP/SAVPF 96\r\na=sendonly\r\na=rid:q send\r\na=rid:h send\r\na=rid:f send\r\na=simulcast:send q;h;f\r\n", 1},
		{"recvonly and inactive do not count", offerHead + "m=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=recvonly\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\na=inactive\r\n", 0},
		{"rejected section", offerHead + "m=video 0 UDP/TLS/RTP/SAVPF 96\r\na=sendonly\r\n", 0},
		{"data channel", offerHead + "m=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\n", 0},
		{"five videos", offerHead + "m=video 9 RTP/SAVPF 96\r\nm=video 9 RTP/SAVPF 96\r\nm=video 9 RTP/SAVPF 96\r\nm=video 9 RTP/SAVPF 96\r\nm=video 9 RTP/SAVPF 96\r\n", 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := sendingTracks(tt.offer)
			if err != nil || got != tt.want {
				t.Errorf("sendingTracks = %d, %v; want %d", got, err, tt.want)
			}
		})
	}
	if _, err := sendingTracks("not sdp"); err == nil {
		t.Error("garbage parsed")
	}
}

// FuzzPublishOffer feeds the SDP entry points that see untrusted offers before
// pion does (track counting, simulcast RIDs) arbitrary text: no panic, and a
// count never exceeds the media sections present.
func FuzzPublishOffer(f *testing.F) {
	f.Add(offerHead + "m=audio 9 UDP/TLS/RTP/SAVPF 111\r\nc=IN IP4 0.0.0.0\r\na=mid:0\r\na=sendonly\r\na=rtpmap:111 opus/48000/2\r\n" +
		"m=video 9 UDP/TLS/RTP/SAVPF 96\r\nc=IN IP4 0.0.0.0\r\na=mid:1\r\na=sendonly\r\na=rid:q send\r\na=rid:h send\r\na=rid:f send\r\na=simulcast:send q;h;f\r\n")
	f.Add(offerHead + "m=video 0 RTP/SAVPF 96\r\na=inactive\r\n")
	f.Add(offerHead + "m=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\na=sctp-port:5000\r\n")
	f.Add("v=0\r\n")
	f.Add("")
	f.Fuzz(func(t *testing.T, offer string) {
		n, err := sendingTracks(offer)
		if err != nil && n != 0 {
			t.Fatalf("count %d with error %v", n, err)
		}
		if sections := countLines(offer, "m="); n > sections {
			t.Fatalf("%d tracks from %d media sections", n, sections)
		}
		rids := peer.OfferedRIDs(offer)
		if len(rids) > countLines(offer, "a=rid:") {
			t.Fatalf("%d RIDs from fewer rid lines", len(rids))
		}
	})
}

func countLines(s, prefix string) int {
	n := 0
	for i := 0; i+len(prefix) <= len(s); i++ {
		// pion's parser also ends a line at a lone CR (corpus d447e5d56aaa9f5a).
		if (i == 0 || s[i-1] == '\n' || s[i-1] == '\r') && s[i:i+len(prefix)] == prefix {
			n++
		}
	}
	return n
}
