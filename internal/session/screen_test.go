package session

import (
	"testing"

	"github.com/podium-sfu/podium/internal/signal"
)

// A camera with simulcast, a microphone, and a screen share with its audio.
const shareOffer = offerHead +
	"m=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=mid:0\r\na=sendonly\r\n" +
	"m=video 9 UDP/TLS/RTP/SAVPF 96\r\na=mid:1\r\na=sendonly\r\na=rid:q send\r\na=rid:h send\r\na=rid:f send\r\na=simulcast:send q;h;f\r\n" +
	"m=video 9 UDP/TLS/RTP/SAVPF 96\r\na=mid:2\r\na=sendonly\r\n" +
	"m=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=mid:3\r\na=sendonly\r\n" +
	"m=video 9 UDP/TLS/RTP/SAVPF 96\r\na=mid:4\r\na=inactive\r\n" +
	"m=video 0 UDP/TLS/RTP/SAVPF 96\r\na=mid:5\r\na=sendonly\r\n"

func TestCheckScreenMids(t *testing.T) {
	tests := []struct {
		name string
		mids []string
		ok   bool
	}{
		{"none", nil, true},
		{"video and audio", []string{"2", "3"}, true},
		{"video only", []string{"2"}, true},
		{"unknown mid", []string{"9"}, false},
		{"two audio sections", []string{"0", "3"}, false},
		{"simulcast video", []string{"1"}, false},
		{"inactive section", []string{"4"}, false},
		{"rejected section", []string{"5"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkScreenMids(shareOffer, tt.mids)
			if (err == nil) != tt.ok {
				t.Fatalf("checkScreenMids(%v) = %v, want ok %v", tt.mids, err, tt.ok)
			}
			if err != nil && signal.AsProtocolError(err).Code != signal.CodeBadSDP {
				t.Errorf("code %s, want bad-sdp", signal.AsProtocolError(err).Code)
			}
		})
	}
}

// The default track limit (4) fits a camera, a microphone and a screen share
// with its audio; a fifth sending section is refused.
func TestMaxTracksFitsAShare(t *testing.T) {
	s := &Session{deps: Deps{MaxTracks: 4}, perms: signal.Permissions{Publish: true}}
	if err := s.checkPublishOffer(shareOffer); err != nil {
		t.Errorf("camera, microphone and share with audio: %v", err)
	}
	five := shareOffer + "m=video 9 UDP/TLS/RTP/SAVPF 96\r\na=mid:6\r\na=sendonly\r\n"
	err := s.checkPublishOffer(five)
	if err == nil || signal.AsProtocolError(err).Code != signal.CodeTooManyTracks {
		t.Errorf("five tracks: %v, want too-many-tracks", err)
	}
}
