package signal

import (
	"errors"
	"strings"
	"testing"
)

// The P2P relay messages are decoded only as far as their envelope: a target,
// an epoch, an SDP or candidate of bounded size; anything else is refused with
// a clear, non-fatal error.
func TestDecodeP2P(t *testing.T) {
	big := strings.Repeat("a", MaxP2PSDPBytes+1)
	cases := []struct {
		name, frame, code string
	}{
		{"offer", `{"type":"p2p-offer","to":"p1","epoch":3,"sdp":"v=0"}`, ""},
		{"answer", `{"type":"p2p-answer","to":"p1","epoch":3,"sdp":"v=0"}`, ""},
		{"candidate", `{"type":"p2p-candidate","to":"p1","epoch":3,"candidate":{"candidate":"candidate:1 1 udp 1 10.0.0.1 5000 typ host","sdpMid":"0"}}`, ""},
		{"end of candidates", `{"type":"p2p-candidate","to":"p1","epoch":3,"candidate":null}`, ""},
		{"state", `{"type":"p2p-state","epoch":3,"state":"connected"}`, ""},
		{"no target", `{"type":"p2p-offer","epoch":3,"sdp":"v=0"}`, CodeBadMessage},
		{"empty sdp", `{"type":"p2p-answer","to":"p1","epoch":3}`, CodeBadSDP},
		{"oversize sdp", `{"type":"p2p-offer","to":"p1","epoch":3,"sdp":"` + big + `"}`, CodeP2PTooLarge},
		{"oversize candidate", `{"type":"p2p-candidate","to":"p1","epoch":3,"candidate":{"candidate":"` + strings.Repeat("c", MaxP2PCandidateBytes+1) + `"}}`, CodeP2PTooLarge},
		{"sdp in a candidate", `{"type":"p2p-candidate","to":"p1","epoch":3,"sdp":"v=0"}`, CodeBadMessage},
		{"candidate in an offer", `{"type":"p2p-offer","to":"p1","epoch":3,"sdp":"v=0","candidate":{"candidate":"x"}}`, CodeBadMessage},
		{"unknown state", `{"type":"p2p-state","epoch":3,"state":"great"}`, CodeBadMessage},
	}
	for _, c := range cases {
		in, err := DecodeMax([]byte(c.frame), 1<<20)
		if c.code == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		var pe *ProtocolError
		if !errors.As(err, &pe) || pe.Code != c.code || pe.Fatal {
			t.Errorf("%s: %v (%+v), want non-fatal %s", c.name, err, in, c.code)
		}
	}
	// The sender cannot choose the from the receiver sees.
	in, err := Decode([]byte(`{"type":"p2p-offer","to":"p1","from":"p9","epoch":1,"sdp":"v=0"}`))
	if err != nil || in.P2P.From != "" {
		t.Errorf("from survived decoding: %+v, %v", in.P2P, err)
	}
}
