package signal

import (
	"reflect"
	"strings"
	"testing"
)

func TestDecodeChat(t *testing.T) {
	limit := strings.Repeat("é", MaxChatChars)
	tests := []struct {
		name  string
		frame string
		want  Incoming
		code  string // expected error code; "" for success
	}{
		{name: "chat", frame: `{"type":"chat","text":"hello <b>all</b>"}`,
			want: Incoming{Type: TypeChat, Chat: &ChatPost{Text: "hello <b>all</b>"}}},
		{name: "lines and tabs", frame: `{"type":"chat","text":"a\n\tb"}`,
			want: Incoming{Type: TypeChat, Chat: &ChatPost{Text: "a\n\tb"}}},
		{name: "2000 characters of 2 bytes", frame: `{"type":"chat","text":"` + limit + `"}`,
			want: Incoming{Type: TypeChat, Chat: &ChatPost{Text: limit}}},
		{name: "2001 characters", frame: `{"type":"chat","text":"` + limit + `x"}`, code: CodeChatTooLong},
		{name: "empty", frame: `{"type":"chat","text":""}`, code: CodeBadMessage},
		{name: "missing text", frame: `{"type":"chat"}`, code: CodeBadMessage},
		{name: "white space", frame: `{"type":"chat","text":" \n\t "}`, code: CodeBadMessage},
		{name: "control character", frame: `{"type":"chat","text":"a\u0007b"}`, code: CodeBadMessage},
		{name: "C1 control character", frame: `{"type":"chat","text":"a\u0085b"}`, code: CodeBadMessage},
		{name: "raise hand", frame: `{"type":"raise-hand","raised":true}`,
			want: Incoming{Type: TypeRaiseHand, Hand: &RaiseHand{Raised: true}}},
		{name: "lower hand", frame: `{"type":"raise-hand"}`,
			want: Incoming{Type: TypeRaiseHand, Hand: &RaiseHand{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Decode([]byte(tt.frame))
			if tt.code != "" {
				pe := AsProtocolError(err)
				if err == nil || pe.Code != tt.code || pe.Fatal {
					t.Fatalf("Decode = %v, %v; want a non-fatal %s", got, err, tt.code)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Decode = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}
