package signal

import "testing"

func TestScreenSource(t *testing.T) {
	if got := ScreenSource("p0a1b2c3d4e5f"); got != "p0a1b2c3d4e5f-screen" {
		t.Errorf("ScreenSource = %q", got)
	}
	for source, owner := range map[string]string{"p0a1b2c3d4e5f-screen": "p0a1b2c3d4e5f", "p1": "", "-screen": "", "a-b-screen": "", "p1-screen-screen": ""} {
		got, ok := ScreenOwner(source)
		if ok != (owner != "") || got != owner && ok {
			t.Errorf("ScreenOwner(%q) = %q, %v; want %q", source, got, ok, owner)
		}
	}
}

func TestDecodeScreenMids(t *testing.T) {
	tests := []struct {
		frame string
		ok    bool
	}{
		{`{"type":"offer","pc":"publish","sdp":"v=0","screenMids":["2","3"]}`, true},
		{`{"type":"offer","pc":"publish","sdp":"v=0"}`, true},
		{`{"type":"offer","pc":"publish","sdp":"v=0","screenMids":["2","3","4"]}`, false},
		{`{"type":"offer","pc":"publish","sdp":"v=0","screenMids":[""]}`, false},
		{`{"type":"answer","pc":"subscribe","sdp":"v=0","screenMids":["2"]}`, false},
	}
	for _, tt := range tests {
		in, err := Decode([]byte(tt.frame))
		if (err == nil) != tt.ok {
			t.Errorf("%s: %v, want ok %v", tt.frame, err, tt.ok)
		}
		if err == nil && len(in.SDP.ScreenMids) > 0 && in.SDP.ScreenMids[0] != "2" {
			t.Errorf("%s: mids %v", tt.frame, in.SDP.ScreenMids)
		}
	}
}
