package signal

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestEncode(t *testing.T) {
	tests := []struct {
		name   string
		typ    string
		body   any
		fields map[string]any // every field besides type, as encoding/json reads it back
	}{
		{"welcome", TypeWelcome, Welcome{
			Version: 1, ID: "p1", Room: "standup", Resume: Resume{ID: "p1", Secret: "s"},
			Participants: []Participant{{ID: "p2", Name: "Bob", VideoMuted: true}}, ParticipantCount: 2,
			ICEServers: []ICEServer{{URLs: []string{"stun:stun.example.org:3478"}}},
		}, map[string]any{
			"version": 1.0, "id": "p1", "room": "standup", "resume": map[string]any{"id": "p1", "secret": "s"},
			"participants":     []any{map[string]any{"id": "p2", "name": "Bob", "audioMuted": false, "videoMuted": true}},
			"participantCount": 2.0,
			"iceServers":       []any{map[string]any{"urls": []any{"stun:stun.example.org:3478"}}},
		}},
		{"error", TypeError, Error{Code: CodeBadSDP, Message: "m", Fatal: false},
			map[string]any{"code": "bad-sdp", "message": "m", "fatal": false}},
		{"pong keeps the exact ts", TypePong, &Ping{TS: "1732270000000"},
			map[string]any{"ts": 1732270000000.0}},
		{"participant-left", TypeLeft, ParticipantLeft{ID: "p1"}, map[string]any{"id": "p1"}},
		{"participant-joined", TypeJoined, ParticipantEvent{Participant: Participant{ID: "p1", Name: "A"}},
			map[string]any{"participant": map[string]any{"id": "p1", "name": "A", "audioMuted": false, "videoMuted": false}}},
		{"bye", TypeBye, Bye{Reason: "server shutting down"}, map[string]any{"reason": "server shutting down"}},
		{"sdp", TypeOffer, SDP{PC: PCSubscribe, SDP: "v=0\r\n"}, map[string]any{"pc": "subscribe", "sdp": "v=0\r\n"}},
		{"end of candidates", TypeCandidate, TrickleCandidate{PC: PCPublish}, map[string]any{"pc": "publish", "candidate": nil}},
		{"empty struct", TypeLeave, struct{}{}, map[string]any{}},
		{"empty map", TypeLeave, map[string]string{}, map[string]any{}},
		{"nil body", TypeLeave, nil, map[string]any{}},
		{"nil pointer body", TypePong, (*Ping)(nil), map[string]any{}},
		{"type needing escapes", `a"b\c`, struct{}{}, map[string]any{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			frame, err := Encode(tt.typ, tt.body)
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			typeJSON, _ := json.Marshal(tt.typ)
			if prefix := append([]byte(`{"type":`), typeJSON...); !bytes.HasPrefix(frame, prefix) {
				t.Errorf("%s does not start with %s", frame, prefix)
			}
			var got map[string]any
			if err := json.Unmarshal(frame, &got); err != nil {
				t.Fatalf("%s is not a JSON object: %v", frame, err)
			}
			if got["type"] != tt.typ {
				t.Errorf("type = %v, want %q", got["type"], tt.typ)
			}
			delete(got, "type")
			if !reflect.DeepEqual(got, tt.fields) {
				t.Errorf("fields of %s = %v, want %v", frame, got, tt.fields)
			}
		})
	}
}

func TestEncodeEmptyBodyIsJustTheType(t *testing.T) {
	for _, body := range []any{struct{}{}, nil} {
		frame, err := Encode(TypeLeave, body)
		if err != nil || string(frame) != `{"type":"leave"}` {
			t.Errorf("Encode(leave, %#v) = %s, %v", body, frame, err)
		}
	}
}

// TestEncodeRejectsNonObjects: a body must be a JSON object, or the frame would be
// the type glued to a fragment of some other value.
func TestEncodeRejectsNonObjects(t *testing.T) {
	for _, body := range []any{"text", 42, []int{1}, true, json.RawMessage(`[1]`)} {
		if frame, err := Encode(TypePong, body); err == nil {
			t.Errorf("Encode(pong, %#v) = %s, want an error", body, frame)
		}
	}
	if _, err := Encode(TypePong, map[string]any{"bad": func() {}}); err == nil {
		t.Error("Encode of an unencodable body succeeded")
	}
}

// TestEncodeDecodeRoundTrip: what a Go client encodes the server decodes back to
// the same message.
func TestEncodeDecodeRoundTrip(t *testing.T) {
	mid, idx, ufrag := "1", uint16(1), "uf"
	msgs := []struct {
		typ  string
		body any
		want Incoming
	}{
		{TypeJoin, Join{Version: 1, Room: "r", Name: "<Ann & \u2028 \"Bo\">", Resume: &Resume{ID: "p1", Secret: "s"}},
			Incoming{Type: TypeJoin, Join: &Join{Version: 1, Room: "r", Name: "<Ann & \u2028 \"Bo\">", Resume: &Resume{ID: "p1", Secret: "s"}}}},
		{TypeOffer, SDP{PC: PCPublish, SDP: "v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\n"},
			Incoming{Type: TypeOffer, SDP: &SDP{PC: PCPublish, SDP: "v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\n"}}},
		{TypeAnswer, SDP{PC: PCSubscribe, SDP: "v=0\r\n"}, Incoming{Type: TypeAnswer, SDP: &SDP{PC: PCSubscribe, SDP: "v=0\r\n"}}},
		{TypeCandidate, TrickleCandidate{PC: PCSubscribe, Candidate: &Candidate{Candidate: "candidate:x", SDPMid: &mid, SDPMLineIndex: &idx, UsernameFragment: &ufrag}},
			Incoming{Type: TypeCandidate, Candidate: &TrickleCandidate{PC: PCSubscribe, Candidate: &Candidate{Candidate: "candidate:x", SDPMid: &mid, SDPMLineIndex: &idx, UsernameFragment: &ufrag}}}},
		{TypeMute, Mute{Audio: false, Video: true}, Incoming{Type: TypeMute, Mute: &Mute{Video: true}}},
		{TypePing, Ping{TS: "17"}, Incoming{Type: TypePing, Ping: &Ping{TS: "17"}}},
		{TypeLeave, struct{}{}, Incoming{Type: TypeLeave}},
	}
	for _, m := range msgs {
		frame, err := Encode(m.typ, m.body)
		if err != nil {
			t.Fatalf("Encode(%s): %v", m.typ, err)
		}
		got, err := Decode(frame)
		if err != nil {
			t.Fatalf("Decode(%s): %v", frame, err)
		}
		if !reflect.DeepEqual(got, m.want) {
			t.Errorf("%s decodes to %s, want %s", frame, show(got), show(m.want))
		}
		if strings.Count(string(frame), `"type"`) != 1 {
			t.Errorf("%s has more than one type", frame)
		}
	}
}
