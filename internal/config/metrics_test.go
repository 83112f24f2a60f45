package config

import (
	"strings"
	"testing"
)

const testMetricsToken = "scrape-0123456789abcdef"

func TestMetricsOptions(t *testing.T) {
	cfg, err := Load([]string{"--metrics-http", "10.0.0.2:9090"}, env{"PODIUM_METRICS_TOKEN": testMetricsToken}.get)
	if err != nil || cfg.MetricsToken != testMetricsToken || cfg.MetricsHTTP != "10.0.0.2:9090" {
		t.Fatalf("%v %q %q", err, cfg.MetricsToken, cfg.MetricsHTTP)
	}
	for _, tt := range []struct {
		token, http string
		key         string // the error names it; "" means valid
	}{
		{"", "", ""},
		{testMetricsToken, "127.0.0.1:9090", ""},
		{"", ":9090", ""},
		{"short", "", "metrics-token:"},
		{"has a space in it somewhere", "", "metrics-token:"},
		{"", "9090", "metrics-http:"},
	} {
		c := Default()
		c.MetricsToken, c.MetricsHTTP = tt.token, tt.http
		err := c.Validate()
		if (err == nil) != (tt.key == "") || err != nil && !strings.HasPrefix(err.Error(), tt.key) {
			t.Errorf("token %q http %q: %v, want error %q", tt.token, tt.http, err, tt.key)
		}
	}
}

// TestPrintMasksMetricsToken: --print-config shows that a token is set, not the token.
func TestPrintMasksMetricsToken(t *testing.T) {
	cfg, _, err := LoadSwitches([]string{"--print-config", "--metrics-token", testMetricsToken}, env{}.get)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := cfg.Print(&b); err != nil {
		t.Fatal(err)
	}
	if out := b.String(); strings.Contains(out, testMetricsToken) || !strings.Contains(out, "metrics-token: '********'\n") {
		t.Errorf("print-config:\n%s", out)
	}
}
