package config

import (
	"strings"
	"testing"
)

func TestClusterKeys(t *testing.T) {
	for _, tc := range []struct {
		args []string
		err  string // "" means valid
	}{
		{nil, ""},
		{[]string{"--region", "eu-west", "--cluster-listen", "127.0.0.1:6222", "--cluster-peers", "nats://127.0.0.1:6223,nats://127.0.0.1:6224", "--relay-port", "7883"}, ""},
		{[]string{"--nats", "nats://user:pw@10.0.0.9:4222", "--nats-creds", "x.creds"}, ""},
		{[]string{"--region", ""}, "region:"},
		{[]string{"--region", "eu west"}, "region:"},
		{[]string{"--cluster-listen", "6222"}, "cluster-listen:"},
		{[]string{"--cluster-listen", "127.0.0.1:6222", "--cluster-peers", "http://x:1"}, "cluster-peers:"},
		{[]string{"--cluster-peers", "nats://127.0.0.1:6223"}, "needs cluster-listen"},
		{[]string{"--nats", "10.0.0.9:4222"}, "nats:"},
		{[]string{"--nats", "http://u:secret@h:1"}, "nats:"},
		{[]string{"--cluster-listen", "127.0.0.1:6222", "--cluster-tls-cert", "c.pem"}, "given together"},
		{[]string{"--relay-port", "70000"}, "relay-port:"},
		{[]string{"--relay-port", "7882"}, "udp-port too"},
		{[]string{"--public-url", "https://eu1.example.com/"}, ""},
		{[]string{"--public-url", "http://10.0.0.5:8443/podium/"}, ""},
		{[]string{"--public-url", "eu1.example.com"}, "public-url:"},
		{[]string{"--public-url", "wss://eu1.example.com/"}, "public-url:"},
		{[]string{"--public-url", "https:///x"}, "public-url:"},
		{[]string{"--public-url", "https://[::]:443/"}, "wildcard"},
		{[]string{"--public-url", "https://0.0.0.0/"}, "wildcard"},
		{[]string{"--public-url", "https://eu1.example.com/?room=x"}, "public-url:"},
		{[]string{"--public-url", "https://u:p@eu1.example.com/"}, "public-url:"},
	} {
		_, err := Load(tc.args, env{}.get)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%v: %v", tc.args, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%v: error %v, want one with %q", tc.args, err, tc.err)
		case err != nil && strings.Contains(err.Error(), "secret"):
			t.Errorf("%v: the error shows the password: %v", tc.args, err)
		}
	}
}

func TestPrintConfigMasksTheNATSPassword(t *testing.T) {
	cfg, err := Load([]string{"--nats", "nats://podium:hunter22@10.0.0.9:4222"}, env{}.get)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := cfg.Print(&b); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "hunter22") || !strings.Contains(b.String(), "nats://podium:xxxxx@10.0.0.9:4222") {
		t.Fatalf("printed:\n%s", b.String())
	}
}
