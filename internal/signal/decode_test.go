package signal

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestDecodeValid(t *testing.T) {
	mid, idx := "0", uint16(0)
	tests := []struct {
		name  string
		frame string
		want  Incoming
	}{
		{
			name:  "join",
			frame: `{"type":"join","version":1,"room":"standup","name":"Alice"}`,
			want:  Incoming{Type: TypeJoin, Join: &Join{Version: 1, Room: "standup", Name: "Alice"}},
		},
		{
			name: "join with resume and token",
			frame: `{"type":"join","version":1,"room":"a.b_c-D9","name":"Zoë 🎉","token":"t",
				"resume":{"id":"p8f3a2c1d","secret":"4b1d"}}`,
			want: Incoming{Type: TypeJoin, Join: &Join{Version: 1, Room: "a.b_c-D9", Name: "Zoë 🎉", Token: "t",
				Resume: &Resume{ID: "p8f3a2c1d", Secret: "4b1d"}}},
		},
		{
			name:  "join, unknown fields ignored",
			frame: `{"type":"join","version":1,"room":"r","name":"n","extra":{"x":[1,2]}}`,
			want:  Incoming{Type: TypeJoin, Join: &Join{Version: 1, Room: "r", Name: "n"}},
		},
		{
			name:  "join, 64-character room and 64-rune name",
			frame: `{"type":"join","version":1,"room":"` + strings.Repeat("r", 64) + `","name":"` + strings.Repeat("é", 64) + `"}`,
			want:  Incoming{Type: TypeJoin, Join: &Join{Version: 1, Room: strings.Repeat("r", 64), Name: strings.Repeat("é", 64)}},
		},
		{
			name:  "offer",
			frame: `{"type":"offer","pc":"publish","sdp":"v=0\r\n"}`,
			want:  Incoming{Type: TypeOffer, SDP: &SDP{PC: PCPublish, SDP: "v=0\r\n"}},
		},
		{
			name:  "answer",
			frame: `{"type":"answer","pc":"subscribe","sdp":"v=0\r\n"}`,
			want:  Incoming{Type: TypeAnswer, SDP: &SDP{PC: PCSubscribe, SDP: "v=0\r\n"}},
		},
		{
			name:  "candidate",
			frame: `{"type":"candidate","pc":"publish","candidate":{"candidate":"candidate:1 1 udp 2122260223 192.168.1.4 54321 typ host","sdpMid":"0","sdpMLineIndex":0}}`,
			want: Incoming{Type: TypeCandidate, Candidate: &TrickleCandidate{PC: PCPublish, Candidate: &Candidate{
				Candidate: "candidate:1 1 udp 2122260223 192.168.1.4 54321 typ host", SDPMid: &mid, SDPMLineIndex: &idx}}},
		},
		{
			name:  "end of candidates",
			frame: `{"type":"candidate","pc":"subscribe","candidate":null}`,
			want:  Incoming{Type: TypeCandidate, Candidate: &TrickleCandidate{PC: PCSubscribe}},
		},
		{
			name:  "mute",
			frame: `{"type":"mute","audio":true,"video":false}`,
			want:  Incoming{Type: TypeMute, Mute: &Mute{Audio: true}},
		},
		{
			name:  "ping",
			frame: `{"type":"ping","ts":1732270000000}`,
			want:  Incoming{Type: TypePing, Ping: &Ping{TS: "1732270000000"}},
		},
		{
			name:  "ping, fractional ts kept exactly",
			frame: `{"type":"ping","ts":1.5e3}`,
			want:  Incoming{Type: TypePing, Ping: &Ping{TS: "1.5e3"}},
		},
		{
			name:  "pin",
			frame: `{"type":"pin","id":"p1c2d3e4f"}`,
			want:  Incoming{Type: TypePin, Pin: &PinTarget{ID: "p1c2d3e4f"}},
		},
		{
			name:  "unpin",
			frame: `{"type":"unpin","id":"p1c2d3e4f"}`,
			want:  Incoming{Type: TypeUnpin, Pin: &PinTarget{ID: "p1c2d3e4f"}},
		},
		{
			name:  "set-last-n",
			frame: `{"type":"set-last-n","n":3}`,
			want:  Incoming{Type: TypeSetLastN, LastN: &SetLastN{N: 3}},
		},
		{
			name:  "set-last-n unlimited",
			frame: `{"type":"set-last-n","n":-1}`,
			want:  Incoming{Type: TypeSetLastN, LastN: &SetLastN{N: -1}},
		},
		{
			name:  "room-settings",
			frame: `{"type":"room-settings","lastN":4,"onStage":["p1c2d3e4f"]}`,
			want:  Incoming{Type: TypeRoomSettings, Settings: &RoomSettings{LastN: ptr(4), OnStage: []string{"p1c2d3e4f"}}},
		},
		{
			name:  "room-settings, fields left out",
			frame: `{"type":"room-settings"}`,
			want:  Incoming{Type: TypeRoomSettings, Settings: &RoomSettings{}},
		},
		{
			name:  "token",
			frame: `{"type":"token","token":"eyJ.x.y"}`,
			want:  Incoming{Type: TypeToken, Token: &TokenRefresh{Token: "eyJ.x.y"}},
		},
		{
			name:  "leave",
			frame: `{"type":"leave"}`,
			want:  Incoming{Type: TypeLeave},
		},
		{
			name:  "leave with a body",
			frame: `{"type":"leave","reason":42}`,
			want:  Incoming{Type: TypeLeave},
		},
		{
			name:  "frame of exactly MaxFrameBytes",
			frame: padTo(`{"type":"ping","ts":1,"pad":"`, `"}`, MaxFrameBytes),
			want:  Incoming{Type: TypePing, Ping: &Ping{TS: "1"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Decode([]byte(tt.frame))
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Decode = %s, want %s", show(got), show(tt.want))
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name  string
		frame string
		code  string
		fatal bool
	}{
		{"empty frame", ``, CodeBadMessage, true},
		{"not JSON", `hello`, CodeBadMessage, true},
		{"truncated JSON", `{"type":"join","version":1`, CodeBadMessage, true},
		{"trailing garbage", `{"type":"ping"} {}`, CodeBadMessage, true},
		{"JSON array", `[{"type":"ping"}]`, CodeBadMessage, true},
		{"JSON string", `"join"`, CodeBadMessage, true},
		{"JSON null", `null`, CodeBadMessage, true},
		{"missing type", `{"version":1,"room":"r","name":"n"}`, CodeBadMessage, true},
		{"empty type", `{"type":""}`, CodeBadMessage, true},
		{"null type", `{"type":null}`, CodeBadMessage, true},
		{"type is a number", `{"type":7}`, CodeBadMessage, true},
		{"type is an object", `{"type":{"join":true}}`, CodeBadMessage, true},

		{"unknown type", `{"type":"dance"}`, CodeUnknownType, false},
		{"server-to-client type", `{"type":"welcome","version":1,"id":"p1"}`, CodeUnknownType, false},
		{"reserved type", `{"type":"suspended","id":"p1"}`, CodeUnknownType, false},
		{"documented server-to-client type", `{"type":"speaker","id":"p1"}`, CodeUnknownType, false},
		{"type is case-sensitive", `{"type":"JOIN","version":1,"room":"r","name":"n"}`, CodeUnknownType, false},

		{"join: version is a string", `{"type":"join","version":"1","room":"r","name":"n"}`, CodeBadMessage, true},
		{"join: version is fractional", `{"type":"join","version":1.5,"room":"r","name":"n"}`, CodeBadMessage, true},
		{"join: room is a number", `{"type":"join","version":1,"room":5,"name":"n"}`, CodeBadMessage, true},
		{"join: name is an array", `{"type":"join","version":1,"room":"r","name":["n"]}`, CodeBadMessage, true},
		{"join: resume is a string", `{"type":"join","version":1,"room":"r","name":"n","resume":"p1"}`, CodeBadMessage, true},
		{"join: resume id is a number", `{"type":"join","version":1,"room":"r","name":"n","resume":{"id":1}}`, CodeBadMessage, true},
		{"join: missing version", `{"type":"join","room":"r","name":"n"}`, CodeBadVersion, true},
		{"join: version 0", `{"type":"join","version":0,"room":"r","name":"n"}`, CodeBadVersion, true},
		{"join: version 2", `{"type":"join","version":2,"room":"r","name":"n"}`, CodeBadVersion, true},
		{"join: negative version", `{"type":"join","version":-1,"room":"r","name":"n"}`, CodeBadVersion, true},

		{"join: empty room", `{"type":"join","version":1,"room":"","name":"n"}`, CodeBadRoom, true},
		{"join: missing room", `{"type":"join","version":1,"name":"n"}`, CodeBadRoom, true},
		{"join: room ../x", `{"type":"join","version":1,"room":"../x","name":"n"}`, CodeBadRoom, true},
		{"join: room with a slash", `{"type":"join","version":1,"room":"a/b","name":"n"}`, CodeBadRoom, true},
		{"join: room with a backslash", `{"type":"join","version":1,"room":"a\\b","name":"n"}`, CodeBadRoom, true},
		{"join: room with a space", `{"type":"join","version":1,"room":"a b","name":"n"}`, CodeBadRoom, true},
		{"join: room with a NUL", `{"type":"join","version":1,"room":"a\u0000","name":"n"}`, CodeBadRoom, true},
		{"join: room with a non-ASCII letter", `{"type":"join","version":1,"room":"café","name":"n"}`, CodeBadRoom, true},
		{"join: room of 65 characters", `{"type":"join","version":1,"room":"` + strings.Repeat("r", 65) + `","name":"n"}`, CodeBadRoom, true},

		{"join: empty name", `{"type":"join","version":1,"room":"r","name":""}`, CodeBadName, true},
		{"join: missing name", `{"type":"join","version":1,"room":"r"}`, CodeBadName, true},
		{"join: name of 65 runes", `{"type":"join","version":1,"room":"r","name":"` + strings.Repeat("é", 65) + `"}`, CodeBadName, true},
		{"join: name with a newline", `{"type":"join","version":1,"room":"r","name":"a\nb"}`, CodeBadName, true},
		{"join: name with a NUL", `{"type":"join","version":1,"room":"r","name":"a\u0000"}`, CodeBadName, true},
		{"join: name with ESC", `{"type":"join","version":1,"room":"r","name":"\u001b[31mred"}`, CodeBadName, true},
		{"join: name with DEL", `{"type":"join","version":1,"room":"r","name":"a\u007f"}`, CodeBadName, true},
		{"join: name with a C1 control (NEL)", `{"type":"join","version":1,"room":"r","name":"a\u0085b"}`, CodeBadName, true},
		{"join: name with a C1 control (CSI)", `{"type":"join","version":1,"room":"r","name":"\u009b31m"}`, CodeBadName, true},

		{"offer: missing pc", `{"type":"offer","sdp":"v=0\r\n"}`, CodeBadMessage, true},
		{"offer: unknown pc", `{"type":"offer","pc":"both","sdp":"v=0\r\n"}`, CodeBadMessage, true},
		{"offer: pc is a number", `{"type":"offer","pc":1,"sdp":"v=0\r\n"}`, CodeBadMessage, true},
		{"offer: sdp is an object", `{"type":"offer","pc":"publish","sdp":{"type":"offer"}}`, CodeBadMessage, true},
		{"offer: empty sdp", `{"type":"offer","pc":"publish","sdp":""}`, CodeBadSDP, false},
		{"offer: missing sdp", `{"type":"offer","pc":"publish"}`, CodeBadSDP, false},
		{"answer: unknown pc", `{"type":"answer","pc":"Subscribe","sdp":"v=0\r\n"}`, CodeBadMessage, true},
		{"answer: empty sdp", `{"type":"answer","pc":"subscribe","sdp":""}`, CodeBadSDP, false},

		{"candidate: missing pc", `{"type":"candidate","candidate":null}`, CodeBadMessage, true},
		{"candidate: candidate is a string", `{"type":"candidate","pc":"publish","candidate":"candidate:1"}`, CodeBadMessage, true},
		{"candidate: sdpMLineIndex negative", `{"type":"candidate","pc":"publish","candidate":{"candidate":"c","sdpMLineIndex":-1}}`, CodeBadMessage, true},
		{"candidate: sdpMLineIndex too large", `{"type":"candidate","pc":"publish","candidate":{"candidate":"c","sdpMLineIndex":65536}}`, CodeBadMessage, true},
		{"mute: audio is a string", `{"type":"mute","audio":"yes","video":false}`, CodeBadMessage, true},
		{"ping: ts is not a number", `{"type":"ping","ts":"soon"}`, CodeBadMessage, true},
		{"ping: ts is an object", `{"type":"ping","ts":{}}`, CodeBadMessage, true},

		{"pin: empty id", `{"type":"pin","id":""}`, CodeBadMessage, false},
		{"pin: missing id", `{"type":"pin"}`, CodeBadMessage, false},
		{"unpin: id of 65 bytes", `{"type":"unpin","id":"` + strings.Repeat("p", 65) + `"}`, CodeBadMessage, false},
		{"pin: id is a number", `{"type":"pin","id":7}`, CodeBadMessage, true},
		{"set-last-n: below -1", `{"type":"set-last-n","n":-2}`, CodeBadMessage, false},
		{"set-last-n: above 1000", `{"type":"set-last-n","n":1001}`, CodeBadMessage, false},
		{"set-last-n: n is a string", `{"type":"set-last-n","n":"3"}`, CodeBadMessage, true},
		{"set-last-n: n is fractional", `{"type":"set-last-n","n":2.5}`, CodeBadMessage, true},
		{"room-settings: lastN below -1", `{"type":"room-settings","lastN":-5}`, CodeBadMessage, false},
		{"room-settings: onStage of 65", `{"type":"room-settings","onStage":[` + strings.Repeat(`"p",`, 64) + `"p"]}`, CodeBadMessage, false},
		{"room-settings: onStage is a string", `{"type":"room-settings","onStage":"p1"}`, CodeBadMessage, true},

		{"token: empty", `{"type":"token","token":""}`, CodeBadMessage, false},
		{"token: too long", `{"type":"token","token":"` + strings.Repeat("t", 4097) + `"}`, CodeBadMessage, false},
		{"token: a number", `{"type":"token","token":5}`, CodeBadMessage, true},
		{"join: token too long", `{"type":"join","version":1,"room":"r","name":"n","token":"` + strings.Repeat("t", 4097) + `"}`, CodeUnauthorized, true},

		{"frame one byte over MaxFrameBytes", padTo(`{"type":"ping","ts":1,"pad":"`, `"}`, MaxFrameBytes+1), CodeTooLarge, true},
		{"oversize frame that is not even JSON", strings.Repeat("x", 100<<10), CodeTooLarge, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Decode([]byte(tt.frame))
			var pe *ProtocolError
			if !errors.As(err, &pe) {
				t.Fatalf("Decode = %s, %v; want a *ProtocolError %s", show(got), err, tt.code)
			}
			if pe.Code != tt.code || pe.Fatal != tt.fatal {
				t.Errorf("error %q: code %s fatal %v, want code %s fatal %v", pe, pe.Code, pe.Fatal, tt.code, tt.fatal)
			}
			if pe.Err == nil || pe.Err.Error() == "" {
				t.Errorf("error %s has no message for people", pe.Code)
			}
		})
	}
}

// TestDecodeErrorMessage checks what the client reads: the message names the
// offending type, and an absurdly long unknown type is cut short.
func TestDecodeErrorMessage(t *testing.T) {
	_, err := Decode([]byte(`{"type":"dance"}`))
	if msg := AsProtocolError(err).ToMessage(); msg.Code != CodeUnknownType || msg.Fatal || !strings.Contains(msg.Message, `"dance"`) {
		t.Errorf("unknown type: %+v", msg)
	}
	long := strings.Repeat("t", 10000)
	_, err = Decode([]byte(`{"type":"` + long + `"}`))
	if msg := AsProtocolError(err).ToMessage(); len(msg.Message) > 200 {
		t.Errorf("unknown type echoed in full: %d bytes", len(msg.Message))
	}
	_, err = Decode(make([]byte, MaxFrameBytes+1))
	if msg := AsProtocolError(err).ToMessage(); msg.Code != CodeTooLarge || !msg.Fatal {
		t.Errorf("too large: %+v", msg)
	}
}

func TestValidRoom(t *testing.T) {
	for room, want := range map[string]bool{
		"standup": true, "A-Z_a.z-09": true, strings.Repeat("x", 64): true,
		"": false, strings.Repeat("x", 65): false, "../x": false, "a/b": false, "a%2fb": false,
		"a b": false, "a\x00": false, "ü": false, "a?b": false, "a#b": false,
	} {
		if got := ValidRoom(room); got != want {
			t.Errorf("ValidRoom(%q) = %v, want %v", room, got, want)
		}
	}
}

// padTo returns head + filler + tail, exactly n bytes long.
func padTo(head, tail string, n int) string {
	return head + strings.Repeat("a", n-len(head)-len(tail)) + tail
}

// show prints an Incoming with its bodies dereferenced.
func show(in Incoming) string {
	var b strings.Builder
	b.WriteString("{Type:" + in.Type)
	for _, body := range bodies(in) {
		if v := reflect.ValueOf(body); !v.IsNil() {
			fmt.Fprintf(&b, " %s:%+v", v.Type().Elem().Name(), v.Elem().Interface())
		}
	}
	return b.String() + "}"
}

// bodies lists every body pointer of in, nil or not.
func bodies(in Incoming) []any {
	return []any{in.Join, in.SDP, in.Candidate, in.Mute, in.Ping, in.Pin, in.LastN, in.Settings, in.Constraints, in.Token, in.Chat, in.Hand, in.P2P, in.P2PState, in.List}
}

func ptr[T any](v T) *T { return &v }

func TestDecodeMax(t *testing.T) {
	frame := []byte(padTo(`{"type":"ping","ts":1,"pad":"`, `"}`, 5000))
	if _, err := DecodeMax(frame, 5000); err != nil {
		t.Errorf("at the limit: %v", err)
	}
	_, err := DecodeMax(frame, 4999)
	if pe := AsProtocolError(err); pe.Code != CodeTooLarge || !pe.Fatal || !strings.Contains(pe.Error(), "4999") {
		t.Errorf("over a configured limit: %v", err)
	}
	big := []byte(padTo(`{"type":"ping","ts":1,"pad":"`, `"}`, 200<<10))
	if _, err := DecodeMax(big, 1<<20); err != nil {
		t.Errorf("a larger configured limit: %v", err)
	}
}
