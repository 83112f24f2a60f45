package signal

import (
	"bytes"
	"testing"
)

func TestDecodeListParticipants(t *testing.T) {
	in, err := Decode([]byte(`{"type":"list-participants","cursor":"200"}`))
	if err != nil || in.List == nil || in.List.Cursor != "200" {
		t.Fatalf("got %+v, %v", in, err)
	}
	for _, bad := range []string{`"-1"`, `"x"`, `"12345678901"`} {
		_, err := Decode([]byte(`{"type":"list-participants","cursor":` + bad + `}`))
		if pe := AsProtocolError(err); err == nil || pe.Code != CodeBadMessage || pe.Fatal {
			t.Errorf("cursor %s: %v, want a non-fatal bad-message", bad, err)
		}
	}
}

func TestPreparedIsEncodedOnce(t *testing.T) {
	p, err := Prepare(TypeParticipants, ParticipantDiff{Left: []string{"a"}, Count: 3})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := Encode(TypeParticipants, p)
	b, _ := Encode(TypeParticipants, p)
	if want := `{"type":"participants","participants":null,"left":["a"],"count":3}`; string(a) != want {
		t.Fatalf("got %s, want %s", a, want)
	}
	if &a[0] != &b[0] || !bytes.Equal(a, b) {
		t.Error("every receiver should share the one frame")
	}
}
