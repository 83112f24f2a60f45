package config

import (
	"strings"
	"testing"
)

func TestTURNConfig(t *testing.T) {
	for _, tc := range []struct {
		args []string
		err  string // "" valid
	}{
		{nil, ""},
		{[]string{"--turn-udp-port", "3478", "--turn-tcp-port", "3478"}, ""},
		{[]string{"--turn-tls-port", "5349"}, "turn-tls-port: needs tls-cert"},
		{[]string{"--turn-udp-port", "7882"}, "turn-udp-port: 7882 is udp-port too"},
		{[]string{"--turn-udp-port", "70000"}, "turn-udp-port: 70000 out of range"},
		{[]string{"--turn-udp-port", "3478", "--http", "0.0.0.0:7880", "--dev"}, "turn-public-ip: needed"},
		{[]string{"--turn-udp-port", "3478", "--http", "0.0.0.0:7880", "--dev", "--public-ip", "198.51.100.1"}, ""},
		{[]string{"--turn-secret", "short"}, "turn-secret: at least 16"},
		{[]string{"--turn-relay-ports", "60000"}, "turn-relay-ports"},
		{[]string{"--turn-relay-ports", "600-700"}, "turn-relay-ports"},
		{[]string{"--turn-relay-ports", "60000-50000"}, "turn-relay-ports"},
		{[]string{"--turn-allow-peer", "10.1.0.0/16,127.0.0.1,fd00::/8"}, ""},
		{[]string{"--turn-allow-peer", "10.1.0.0/33"}, "turn-allow-peer"},
		{[]string{"--turn-credential-ttl", "10s"}, "turn-credential-ttl"},
		{[]string{"--ice-server", "turn:turn.example.org:3478?transport=tcp"}, "ice-server: \"turn:turn.example.org:3478?transport=tcp\" needs"},
		{[]string{"--ice-server", "turn:turn.example.org:3478", "--turn-secret", "0123456789abcdef"}, ""},
		{[]string{"--ice-server", "turns:turn.example.org:5349", "--ice-username", "u", "--ice-credential", "c"}, ""},
		{[]string{"--ice-server", "turn:t.example.org", "--ice-username", "u"}, "ice-username and ice-credential"},
		{[]string{"--ice-server", "http://example.org"}, "must start with stun:"},
		{[]string{"--turn-host", "turn.example.org/x"}, "turn-host"},
	} {
		_, err := Load(tc.args, func(string) string { return "" })
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%v: %v", tc.args, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%v: error %v, want one containing %q", tc.args, err, tc.err)
		}
	}
}

func TestTURNDerivedAddresses(t *testing.T) {
	load := func(args ...string) Config {
		c, err := Load(args, func(string) string { return "" })
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c := load("--turn-udp-port", "3478")
	if !c.TURN() || c.TURNListenIP() != "127.0.0.1" || c.TURNRelayIP().String() != "127.0.0.1" || c.TURNURLHost() != "127.0.0.1" {
		t.Errorf("loopback: %v %q %v %q", c.TURN(), c.TURNListenIP(), c.TURNRelayIP(), c.TURNURLHost())
	}
	c = load("--turn-tcp-port", "443", "--http", "0.0.0.0:7880", "--dev", "--public-ip", "198.51.100.1/10.0.0.5", "--turn-host", "turn.example.org")
	if c.TURNListenIP() != "" || c.TURNRelayIP().String() != "198.51.100.1" || c.TURNURLHost() != "turn.example.org" {
		t.Errorf("behind NAT: %q %v %q", c.TURNListenIP(), c.TURNRelayIP(), c.TURNURLHost())
	}
	if lo, hi := c.TURNRelayRange(); lo != 49152 || hi != 65535 {
		t.Errorf("relay range %d-%d", lo, hi)
	}
	if d := Default(); d.TURN() {
		t.Error("the embedded TURN server is on by default")
	}
}
