package config

import (
	"strings"
	"testing"
	"time"
)

const testSecret = "0123456789abcdef0123456789abcdef"

// TestDevModeRefusesNonLoopbackWithoutKeys: open rooms are the default on
// loopback only; anywhere else the server refuses to start unless keys are given
// or dev mode is asked for explicitly.
func TestDevModeRefusesNonLoopbackWithoutKeys(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     env
		wantErr bool
		dev     bool
	}{
		{"default loopback: dev mode", nil, nil, false, true},
		{"localhost: dev mode", []string{"--http", "localhost:7880"}, nil, false, true},
		{"IPv6 loopback: dev mode", []string{"--http", "[::1]:7880"}, nil, false, true},
		{"127.0.0.2 is loopback", []string{"--http", "127.0.0.2:7880"}, nil, false, true},
		{"all interfaces without keys: refused", []string{"--http", "0.0.0.0:7880"}, nil, true, false},
		{"empty host without keys: refused", []string{"--http", ":7880"}, nil, true, false},
		{"LAN address without keys: refused", []string{"--http", "192.168.1.5:7880"}, nil, true, false},
		{"host name without keys: refused", []string{"--http", "podium.example.org:443"}, nil, true, false},
		{"all interfaces with --dev", []string{"--http", "0.0.0.0:7880", "--dev"}, nil, false, true},
		{"all interfaces with PODIUM_DEV", []string{"--http", "0.0.0.0:7880"}, env{"PODIUM_DEV": "true"}, false, true},
		{"all interfaces with keys: access control", []string{"--http", "0.0.0.0:7880", "--auth-keys", "k1:" + testSecret}, nil, false, false},
		{"keys from the environment", []string{"--http", "0.0.0.0:7880"}, env{"PODIUM_AUTH_KEYS": "k1:" + testSecret}, false, false},
		{"loopback with keys: access control", []string{"--auth-keys", "k1:" + testSecret}, nil, false, false},
		{"keys and dev: tokens optional", []string{"--auth-keys", "k1:" + testSecret, "--dev"}, nil, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := tt.env
			if e == nil {
				e = env{}
			}
			cfg, err := Load(tt.args, e.get)
			if tt.wantErr {
				if err == nil || !strings.HasPrefix(err.Error(), "auth-keys:") || !strings.Contains(err.Error(), "dev") {
					t.Fatalf("Load = %v, want an auth-keys error that mentions dev", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.DevMode() != tt.dev {
				t.Errorf("DevMode = %v, want %v", cfg.DevMode(), tt.dev)
			}
		})
	}
}

func TestValidateAccessAndLimits(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Config)
		key    string
	}{
		{"two keys", func(c *Config) { c.AuthKeys = []string{"a:" + testSecret, "b:" + testSecret} }, ""},
		{"key without id", func(c *Config) { c.AuthKeys = []string{testSecret} }, "auth-keys:"},
		{"short secret", func(c *Config) { c.AuthKeys = []string{"a:secret"} }, "auth-keys:"},
		{"duplicate key id", func(c *Config) { c.AuthKeys = []string{"a:" + testSecret, "a:" + testSecret + "x"} }, "auth-keys:"},
		{"unlimited everything", func(c *Config) {
			c.MaxRooms, c.MaxParticipants, c.MaxTracks, c.JoinsPerIP, c.SignalingRate = 0, 0, 0, 0, 0
		}, ""},
		{"negative max-rooms", func(c *Config) { c.MaxRooms = -1 }, "max-rooms:"},
		{"negative max-participants", func(c *Config) { c.MaxParticipants = -1 }, "max-participants:"},
		{"negative max-tracks", func(c *Config) { c.MaxTracks = -3 }, "max-tracks:"},
		{"negative joins-per-ip", func(c *Config) { c.JoinsPerIP = -1 }, "joins-per-ip:"},
		{"negative signaling-rate", func(c *Config) { c.SignalingRate = -1 }, "signaling-rate:"},
		{"zero burst", func(c *Config) { c.SignalingBurst = 0 }, "signaling-burst:"},
		{"zero burst without a rate", func(c *Config) { c.SignalingBurst, c.SignalingRate = 0, 0 }, ""},
		{"tiny messages", func(c *Config) { c.MaxMessageBytes = 100 }, "max-message-bytes:"},
		{"huge messages", func(c *Config) { c.MaxMessageBytes = 1 << 30 }, "max-message-bytes:"},
		{"negative drain", func(c *Config) { c.DrainTimeout = -time.Second }, "drain-timeout:"},
		{"drain of a week", func(c *Config) { c.DrainTimeout = 7 * 24 * time.Hour }, "drain-timeout:"},
		{"no drain", func(c *Config) { c.DrainTimeout = 0 }, ""},
		{"negative rooms-per-ip", func(c *Config) { c.RoomsPerIP = -1 }, "rooms-per-ip:"},
		{"negative max-conns-per-ip", func(c *Config) { c.MaxConnsPerIP = -1 }, "max-conns-per-ip:"},
		{"media-timeout too short", func(c *Config) { c.MediaTimeout = time.Second }, "media-timeout:"},
		{"no http-idle-timeout", func(c *Config) { c.HTTPIdleTimeout = 0 }, "http-idle-timeout:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Default()
			tt.change(&cfg)
			err := cfg.Validate()
			switch {
			case tt.key == "" && err != nil:
				t.Errorf("want valid, got %v", err)
			case tt.key != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.key)):
				t.Errorf("error %v, want one starting with %s", err, tt.key)
			}
		})
	}
}

func TestDurations(t *testing.T) {
	cfg, err := Load([]string{"--drain-timeout", "1m30s"}, env{}.get)
	if err != nil || cfg.DrainTimeout != 90*time.Second {
		t.Errorf("flag: %v %v", cfg.DrainTimeout, err)
	}
	cfg, err = Load(nil, env{"PODIUM_DRAIN_TIMEOUT": "5s"}.get)
	if err != nil || cfg.DrainTimeout != 5*time.Second {
		t.Errorf("env: %v %v", cfg.DrainTimeout, err)
	}
	cfg, err = Load([]string{"--config", writeYAML(t, "drain-timeout: 45s\n")}, env{}.get)
	if err != nil || cfg.DrainTimeout != 45*time.Second {
		t.Errorf("yaml: %v %v", cfg.DrainTimeout, err)
	}
	for name, load := range map[string]func() error{
		"flag without unit": func() error { _, err := Load([]string{"--drain-timeout", "30"}, env{}.get); return err },
		"env words":         func() error { _, err := Load(nil, env{"PODIUM_DRAIN_TIMEOUT": "soon"}.get); return err },
		"yaml bare number": func() error {
			_, err := Load([]string{"--config", writeYAML(t, "drain-timeout: 30\n")}, env{}.get)
			return err
		},
	} {
		if err := load(); err == nil || !strings.Contains(err.Error(), "drain-timeout") {
			t.Errorf("%s: %v, want an error naming drain-timeout", name, err)
		}
	}
}

// TestPrintConfig: --print-config shows every key's effective value with secrets
// masked, and the output loads back (apart from the masked secrets).
func TestPrintConfig(t *testing.T) {
	cfg, sw, err := LoadSwitches([]string{"--print-config", "--http", "0.0.0.0:80", "--auth-keys", "main:" + testSecret + ",old:" + testSecret + "zz"}, env{}.get)
	if err != nil || !sw.PrintConfig {
		t.Fatalf("%v %+v", err, sw)
	}
	var b strings.Builder
	if err := cfg.Print(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.Contains(out, testSecret) {
		t.Fatalf("secret printed:\n%s", out)
	}
	for _, want := range []string{"http: 0.0.0.0:80\n", "- main:********\n", "- old:********\n", "drain-timeout: 30s\n", "last-n: 8\n", "log-json: false\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// Every key appears, in declaration order, and the output is a valid config
	// file once the secrets are put back.
	restored := strings.NewReplacer("main:********", "main:"+testSecret, "old:********", "old:"+testSecret+"zz").Replace(out)
	again, err := Load([]string{"--config", writeYAML(t, restored)}, env{}.get)
	if err != nil {
		t.Fatalf("printed config does not load: %v\n%s", err, restored)
	}
	if again.HTTP != cfg.HTTP || len(again.AuthKeys) != 2 || again.DrainTimeout != cfg.DrainTimeout {
		t.Errorf("round trip: %+v", again)
	}
	if _, sw, _ := LoadSwitches(nil, env{}.get); sw.PrintConfig {
		t.Error("print-config without the flag")
	}
	// An invalid configuration is still returned, for printing.
	bad, _, err := LoadSwitches([]string{"--http", "0.0.0.0:80"}, env{}.get)
	if err == nil || bad.HTTP != "0.0.0.0:80" {
		t.Errorf("invalid: %v %+v", err, bad.HTTP)
	}
}
