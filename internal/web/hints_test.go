package web

import (
	"net/url"
	"testing"
)

func TestWSHints(t *testing.T) {
	for _, tc := range []struct {
		query string
		want  Hints
		ok    bool
	}{
		{"", Hints{}, true},
		{"region=eu-west&bridge=n0a1b2c3d4e5f", Hints{Region: "eu-west", Bridge: "n0a1b2c3d4e5f"}, true},
		{"region=eu%20west", Hints{}, false},
		{"bridge=../x", Hints{}, false},
		{"region=" + string(make([]byte, 33)), Hints{}, false},
	} {
		q, _ := url.ParseQuery(tc.query)
		got, err := wsHints(q)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("%q: %+v, %v", tc.query, got, err)
		}
	}
}
