package peer

import (
	"slices"
	"testing"
)

func TestOfferedRIDs(t *testing.T) {
	offer := "v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n" +
		"m=audio 9 UDP/TLS/RTP/SAVPF 111\r\nc=IN IP4 0.0.0.0\r\na=mid:0\r\na=rid:x send\r\n" +
		"m=video 9 UDP/TLS/RTP/SAVPF 96\r\nc=IN IP4 0.0.0.0\r\na=mid:1\r\n" +
		"a=rid:q send\r\na=rid:h send\r\na=rid:f send\r\na=rid:r recv\r\na=simulcast:send q;h;f\r\n"
	if got := OfferedRIDs(offer); !slices.Equal(got, []string{"q", "h", "f"}) {
		t.Errorf("OfferedRIDs = %v, want [q h f]", got)
	}
	// A 640x360 camera offers two encodings (Firefox's form: RIDs as in
	// sendEncodings, no restrictions); a small one a single encoding, no RID.
	two := "v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n" +
		"m=video 9 UDP/TLS/RTP/SAVPF 120\r\nc=IN IP4 0.0.0.0\r\na=mid:1\r\na=sendonly\r\n" +
		"a=rid:q send\r\na=rid:h send\r\na=simulcast:send q;h\r\n"
	if got := OfferedRIDs(two); !slices.Equal(got, []string{"q", "h"}) {
		t.Errorf("OfferedRIDs(two encodings) = %v, want [q h]", got)
	}
	one := "v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n" +
		"m=video 9 UDP/TLS/RTP/SAVPF 96\r\nc=IN IP4 0.0.0.0\r\na=mid:1\r\na=sendonly\r\n"
	if got := OfferedRIDs(one); got != nil {
		t.Errorf("OfferedRIDs(one encoding) = %v, want none", got)
	}
	if got := OfferedRIDs("not sdp"); got != nil {
		t.Errorf("garbage gave %v", got)
	}
}
