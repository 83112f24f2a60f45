package signal

import (
	"errors"
	"reflect"
	"testing"
)

// FuzzDecode feeds Decode untrusted frames. The seed corpus in
// testdata/fuzz/FuzzDecode holds every example of docs/protocol.md.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"type":"join","version":1,"room":"standup","name":"Alice"}`))
	f.Fuzz(func(t *testing.T, frame []byte) {
		in, err := Decode(frame)
		if err != nil {
			var pe *ProtocolError
			if !errors.As(err, &pe) || pe.Code == "" || pe.Err == nil {
				t.Fatalf("Decode error %v (%T) is not a complete *ProtocolError", err, err)
			}
			// bad-message is fatal when the frame cannot be understood, non-fatal for
			// an understood request with a bad value (pin, set-last-n, room-settings).
			if fatal, fixed := codeFatal[pe.Code]; pe.Code != CodeBadMessage && (!fixed || pe.Fatal != fatal) {
				t.Fatalf("code %s with fatal=%v", pe.Code, pe.Fatal)
			}
			return
		}
		checkBodies(t, in)
		if in.Join == nil {
			return
		}
		// A decoded join survives re-encoding: what the server accepted once it accepts
		// again unchanged.
		frame2, err := Encode(TypeJoin, in.Join)
		if err != nil {
			t.Fatalf("Encode(%+v): %v", *in.Join, err)
		}
		in2, err := Decode(frame2)
		if err != nil {
			t.Fatalf("re-encoded join %s: %v", frame2, err)
		}
		if !reflect.DeepEqual(in, in2) {
			t.Fatalf("join changed on re-encoding:\n%s\n%s", show(in), show(in2))
		}
	})
}

// codeFatal is the fatal flag of each code Decode may return (docs/protocol.md).
var codeFatal = map[string]bool{
	CodeTooLarge: true, CodeUnknownType: false, CodeBadVersion: true,
	CodeBadRoom: true, CodeBadName: true, CodeBadSDP: false, CodeUnauthorized: true,
	CodeChatTooLong: false, CodeP2PTooLarge: false,
}

// checkBodies asserts a decoded message has exactly the body its type calls for.
func checkBodies(t *testing.T, in Incoming) {
	t.Helper()
	want := map[string]string{
		TypeJoin: "Join", TypeOffer: "SDP", TypeAnswer: "SDP", TypeCandidate: "TrickleCandidate",
		TypeMute: "Mute", TypePing: "Ping", TypePin: "PinTarget", TypeUnpin: "PinTarget",
		TypeSetLastN: "SetLastN", TypeRoomSettings: "RoomSettings", TypeConstraints: "Constraints", TypeLeave: "",
		TypeToken: "TokenRefresh", TypeChat: "ChatPost", TypeRaiseHand: "RaiseHand",
		TypeP2POffer: "P2PSignal", TypeP2PAnswer: "P2PSignal", TypeP2PCandidate: "P2PSignal", TypeP2PState: "P2PState",
		TypeListParticipants: "ListParticipants",
	}
	body, known := want[in.Type]
	if !known {
		t.Fatalf("decoded a message of type %q", in.Type)
	}
	var set []string
	for _, ptr := range bodies(in) {
		if v := reflect.ValueOf(ptr); !v.IsNil() {
			set = append(set, v.Type().Elem().Name())
		}
	}
	switch {
	case body == "" && len(set) != 0:
		t.Fatalf("%s has bodies %v", in.Type, set)
	case body != "" && (len(set) != 1 || set[0] != body):
		t.Fatalf("%s has bodies %v, want only %s", in.Type, set, body)
	}
	if j := in.Join; j != nil && (j.Version != Version || !ValidRoom(j.Room) || j.Name == "" || hasControl(j.Name)) {
		t.Fatalf("accepted an invalid join %+v", *j)
	}
	if s := in.SDP; s != nil && (s.SDP == "" || s.PC != PCPublish && s.PC != PCSubscribe) {
		t.Fatalf("accepted an invalid %s %+v", in.Type, *s)
	}
	if c := in.Candidate; c != nil && c.PC != PCPublish && c.PC != PCSubscribe {
		t.Fatalf("accepted a candidate for pc %q", c.PC)
	}
	if p := in.Pin; p != nil && (p.ID == "" || len(p.ID) > 64) {
		t.Fatalf("accepted %s of %q", in.Type, p.ID)
	}
	if n := in.LastN; n != nil && (n.N < -1 || n.N > 1000) {
		t.Fatalf("accepted set-last-n %d", n.N)
	}
	if p := in.P2P; p != nil && (p.To == "" || p.From != "" || len(p.SDP) > MaxP2PSDPBytes) {
		t.Fatalf("accepted %s %+v", in.Type, *p)
	}
}
