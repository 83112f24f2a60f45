package client

import (
	"strings"
	"testing"
)

// The same order as web/src/protocol/redirect.ts reconnectUrl.
func TestReconnectURL(t *testing.T) {
	f := []string{"f1", "f2"}
	var got []string
	for n := 1; n <= 6; n++ {
		got = append(got, ReconnectURL("b", f, n))
	}
	if want := "b f1 f2 b f1 f2"; strings.Join(got, " ") != want {
		t.Errorf("%v, want %s", got, want)
	}
	if ReconnectURL("b", nil, 5) != "b" {
		t.Error("without fallbacks: not the bridge")
	}
}
