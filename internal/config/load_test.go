package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// env is a fake environment for Load.
type env map[string]string

func (e env) get(key string) string { return e[key] }

func writeYAML(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "podium.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadDefaults(t *testing.T) {
	cfg, err := Load(nil, env{}.get)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cfg, Default()) {
		t.Errorf("Load with nothing = %+v, want Default() %+v", cfg, Default())
	}
	// The documented laptop defaults.
	if cfg.HTTP != "127.0.0.1:7880" || cfg.UDPPort != 7882 || cfg.TCPPort != 7881 || cfg.LogLevel != "info" ||
		cfg.LogJSON || cfg.TLS() || len(cfg.PublicIPs)+len(cfg.MediaIPs)+len(cfg.STUN) != 0 {
		t.Errorf("defaults %+v", cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("defaults do not validate: %v", err)
	}
}

func TestLoadYAML(t *testing.T) {
	// testdata/podium.yaml sets every key to something other than its default.
	want := Default()
	want.HTTP, want.UDPPort, want.TCPPort = "0.0.0.0:8443", 50000, 0
	want.PublicIPs, want.MediaIPs = []string{"203.0.113.7", "2001:db8::7"}, []string{"10.0.0.2"}
	want.STUN = []string{"stun:stun.example.org:3478", "stuns:stun.example.org:5349"}
	want.TLSCert, want.TLSKey = "/etc/podium/cert.pem", "/etc/podium/key.pem"
	want.LastN, want.VideoPausing, want.P2P = 4, false, false
	want.AudioSlots = 2
	want.LogLevel, want.LogJSON = "debug", true
	want.Dev = true
	want.OverloadCPU = 0.9
	want.AuthKeys = []string{"2026-01:0123456789abcdef0123456789abcdef", "2025-12:fedcba9876543210fedcba9876543210"}
	want.MetricsToken, want.MetricsHTTP = "metrics-0123456789abcdef", "10.0.0.2:9090"
	want.MaxRooms, want.MaxParticipants, want.MaxTracks, want.JoinsPerIP = 50, 25, 2, 30
	want.SignalingRate, want.SignalingBurst, want.MaxMessageBytes = 10, 40, 32768
	want.TrustProxy, want.DrainTimeout = true, 2*time.Minute
	want.TURNUDPPort, want.TURNTCPPort, want.TURNTLSPort = 3478, 3479, 5349
	want.TURNHost, want.TURNPublicIP, want.TURNRealm, want.TURNSecret = "turn.example.org", "203.0.113.8", "example.org", "turn-0123456789abcdef"
	want.TURNCredentialTTL, want.TURNRelayPorts, want.TURNAllowPeer = 2*time.Hour, "40000-40999", []string{"10.1.0.0/16"}
	want.TURNMaxAllocations, want.TURNMaxLifetime, want.TURNBandwidth = 6, 3*time.Hour, 5_000_000
	want.ICEServers, want.ICEUsername, want.ICECredential = []string{"turns:turn2.example.org:443?transport=tcp"}, "alice", "ice-secret"
	want.RoomsPerIP, want.MediaTimeout, want.MaxConnsPerIP, want.HTTPIdleTimeout = 5, 45*time.Second, 16, 20*time.Second
	want.PublicURL = "https://eu1.example.com/"
	want.Region, want.ClusterListen, want.ClusterPeers = "eu-west", "10.0.0.2:6222", []string{"nats://10.0.0.3:6222", "nats://10.0.0.4:6222"}
	want.ClusterTLSCert, want.ClusterTLSKey, want.ClusterTLSCA = "/etc/podium/cluster.pem", "/etc/podium/cluster-key.pem", "/etc/podium/cluster-ca.pem"
	want.NATS, want.NATSCreds, want.RelayPort = "nats://10.0.0.9:4222", "/etc/podium/nats.creds", 7883
	for name, load := range map[string]func() (Config, error){
		"--config":      func() (Config, error) { return Load([]string{"--config", "testdata/podium.yaml"}, env{}.get) },
		"-config=":      func() (Config, error) { return Load([]string{"-config=testdata/podium.yaml"}, env{}.get) },
		"PODIUM_CONFIG": func() (Config, error) { return Load(nil, env{"PODIUM_CONFIG": "testdata/podium.yaml"}.get) },
		"flag over env": func() (Config, error) {
			return Load([]string{"--config", "testdata/podium.yaml"}, env{"PODIUM_CONFIG": "missing.yaml"}.get)
		},
	} {
		t.Run(name, func(t *testing.T) {
			cfg, err := load()
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(cfg, want) {
				t.Errorf("got  %+v\nwant %+v", cfg, want)
			}
		})
	}
}

func TestYAMLExampleCoversEveryKey(t *testing.T) {
	data, err := os.ReadFile("testdata/podium.yaml")
	if err != nil {
		t.Fatal(err)
	}
	typ := reflect.TypeOf(Config{})
	for i := range typ.NumField() {
		if key := typ.Field(i).Tag.Get("key"); !strings.Contains(string(data), "\n"+key+":") {
			t.Errorf("testdata/podium.yaml does not set %s", key)
		}
	}
}

func TestLoadPartialYAMLKeepsDefaults(t *testing.T) {
	cfg, err := Load([]string{"--config", writeYAML(t, "udp-port: 9000\n")}, env{}.get)
	if err != nil {
		t.Fatal(err)
	}
	want := Default()
	want.UDPPort = 9000
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("got %+v, want %+v", cfg, want)
	}
	if cfg, err = Load([]string{"--config", writeYAML(t, "# nothing yet\n")}, env{}.get); err != nil || !reflect.DeepEqual(cfg, Default()) {
		t.Errorf("empty file: %+v, %v", cfg, err)
	}
}

func TestLoadPrecedence(t *testing.T) {
	path := writeYAML(t, "dev: true\nhttp: 0.0.0.0:1000\nudp-port: 1001\ntcp-port: 1002\nlog-level: warn\nstun: [stun:yaml]\n")
	environment := env{
		"PODIUM_CONFIG":    path,
		"PODIUM_UDP_PORT":  "2001",
		"PODIUM_TCP_PORT":  "2002",
		"PODIUM_LOG_LEVEL": "error",
		"PODIUM_STUN":      "stun:env",
		"PODIUM_LOG_JSON":  "true",
		"PODIUM_MEDIA_IP":  "", // empty means unset
	}
	cfg, err := Load([]string{"--tcp-port", "3002", "--log-level=debug", "--log-json=false"}, environment.get)
	if err != nil {
		t.Fatal(err)
	}
	want := Default()
	want.HTTP = "0.0.0.0:1000"       // YAML only
	want.UDPPort = 2001              // env over YAML
	want.TCPPort = 3002              // flag over env over YAML
	want.LogLevel = "debug"          // flag over env over YAML
	want.STUN = []string{"stun:env"} // env over YAML
	want.LogJSON = false             // flag over env
	want.Dev = true                  // YAML only
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("got  %+v\nwant %+v", cfg, want)
	}
}

func TestLoadBoolFlagWithoutValue(t *testing.T) {
	cfg, err := Load([]string{"--log-json", "--tls-self-signed"}, env{}.get)
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.LogJSON || !cfg.TLSSelfSigned || !cfg.TLS() {
		t.Errorf("bool flags: %+v", cfg)
	}
}

func TestLoadCommaLists(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  env
		want []string
	}{
		{"flag", []string{"--public-ip", "203.0.113.1,203.0.113.2"}, env{}, []string{"203.0.113.1", "203.0.113.2"}},
		{"spaces and empty items", []string{"--public-ip", " 203.0.113.1 , ,203.0.113.2,"}, env{}, []string{"203.0.113.1", "203.0.113.2"}},
		{"env", nil, env{"PODIUM_PUBLIC_IP": "203.0.113.3,2001:db8::1"}, []string{"203.0.113.3", "2001:db8::1"}},
		{"flag replaces env", []string{"--public-ip=203.0.113.9"}, env{"PODIUM_PUBLIC_IP": "203.0.113.3"}, []string{"203.0.113.9"}},
		{"repeated flag: the last wins", []string{"--public-ip=203.0.113.1", "--public-ip=203.0.113.2"}, env{}, []string{"203.0.113.2"}},
		{"empty flag clears", []string{"--public-ip="}, env{"PODIUM_PUBLIC_IP": "203.0.113.3"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Load(tt.args, tt.env.get)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(cfg.PublicIPs, tt.want) {
				t.Errorf("public-ip = %q, want %q", cfg.PublicIPs, tt.want)
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  env
		yaml string // written to a file passed with --config when set
		want []string
	}{
		{name: "unknown YAML key", yaml: "http: 127.0.0.1:1\nudp_port: 5\n", want: []string{`unknown key "udp_port"`}},
		{name: "YAML key with wrong type", yaml: "udp-port: many\n", want: []string{"udp-port"}},
		{name: "YAML list for a string", yaml: "http: [a, b]\n", want: []string{"http"}},
		{name: "YAML not a mapping", yaml: "- http\n", want: []string{"podium.yaml"}},
		{name: "YAML syntax", yaml: "http: \"unclosed\n", want: []string{"podium.yaml"}},
		{name: "missing file", args: []string{"--config", "testdata/nope.yaml"}, want: []string{"nope.yaml"}},
		{name: "env not an integer", env: env{"PODIUM_UDP_PORT": "eight"}, want: []string{"udp-port", "PODIUM_UDP_PORT"}},
		{name: "env not a bool", env: env{"PODIUM_LOG_JSON": "yes please"}, want: []string{"log-json", "PODIUM_LOG_JSON"}},
		{name: "flag not an integer", args: []string{"--tcp-port", "x"}, want: []string{"tcp-port"}},
		{name: "unknown flag", args: []string{"--udp_port", "1"}, want: []string{"udp_port"}},
		{name: "positional argument", args: []string{"extra"}, want: []string{`"extra"`}},
		{name: "invalid after merge", env: env{"PODIUM_LOG_LEVEL": "loud"}, want: []string{"log-level"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := tt.args
			if tt.yaml != "" {
				args = append([]string{"--config", writeYAML(t, tt.yaml)}, args...)
			}
			environment := tt.env
			if environment == nil {
				environment = env{}
			}
			_, err := Load(args, environment.get)
			if err == nil {
				t.Fatalf("Load(%q) succeeded, want an error naming %q", args, tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Config)
		key    string // the error names it; "" means valid
	}{
		{"defaults", func(*Config) {}, ""},
		{"any address in dev mode", func(c *Config) { c.HTTP, c.Dev = ":7880", true }, ""},
		{"any address with keys", func(c *Config) { c.HTTP, c.AuthKeys = ":7880", []string{"k:" + testSecret} }, ""},
		{"IPv6 address", func(c *Config) { c.HTTP = "[::1]:7880" }, ""},
		{"ports 0 and 65535", func(c *Config) { c.UDPPort, c.TCPPort = 65535, 0 }, ""},
		{"IPv4 and IPv6 IPs", func(c *Config) { c.PublicIPs, c.MediaIPs = []string{"203.0.113.1", "2001:db8::1"}, []string{"::1"} }, ""},
		{"stun and stuns", func(c *Config) { c.STUN = []string{"stun:a:3478", "stuns:b:5349"} }, ""},
		{"cert and key", func(c *Config) { c.TLSCert, c.TLSKey = "c.pem", "k.pem" }, ""},
		{"self-signed", func(c *Config) { c.TLSSelfSigned = true }, ""},
		{"each log level", func(c *Config) { c.LogLevel = "warn" }, ""},
		{"last-n unlimited", func(c *Config) { c.LastN = -1 }, ""},
		{"last-n zero", func(c *Config) { c.LastN = 0 }, ""},
		{"last-n below -1", func(c *Config) { c.LastN = -2 }, "last-n:"},
		{"audio-slots off", func(c *Config) { c.AudioSlots = 0 }, ""},
		{"audio-slots negative", func(c *Config) { c.AudioSlots = -1 }, "audio-slots:"},
		{"audio-slots above 16", func(c *Config) { c.AudioSlots = 17 }, "audio-slots:"},

		{"http without port", func(c *Config) { c.HTTP = "127.0.0.1" }, "http:"},
		{"http empty", func(c *Config) { c.HTTP = "" }, "http:"},
		{"http port not a number", func(c *Config) { c.HTTP = "127.0.0.1:web" }, "http:"},
		{"http port too large", func(c *Config) { c.HTTP = "127.0.0.1:65536" }, "http:"},
		{"http port negative", func(c *Config) { c.HTTP = "127.0.0.1:-1" }, "http:"},
		{"udp-port too large", func(c *Config) { c.UDPPort = 65536 }, "udp-port:"},
		{"udp-port negative", func(c *Config) { c.UDPPort = -1 }, "udp-port:"},
		{"tcp-port too large", func(c *Config) { c.TCPPort = 1 << 20 }, "tcp-port:"},
		{"public-ip pinned to local addresses", func(c *Config) { c.PublicIPs = []string{"203.0.113.1/10.0.0.1", "127.0.0.1/127.0.0.1"} }, ""},
		{"public-ip not an IP", func(c *Config) { c.PublicIPs = []string{"203.0.113.1", "example.org"} }, "public-ip:"},
		{"public-ip pinned to a name", func(c *Config) { c.PublicIPs = []string{"203.0.113.1/eth0"} }, "public-ip:"},
		{"media-ip is never a pair", func(c *Config) { c.MediaIPs = []string{"10.0.0.1/10.0.0.2"} }, "media-ip:"},
		{"media-ip not an IP", func(c *Config) { c.MediaIPs = []string{"10.0.0.256"} }, "media-ip:"},
		{"media-ip with a port", func(c *Config) { c.MediaIPs = []string{"10.0.0.1:5000"} }, "media-ip:"},
		{"stun without scheme", func(c *Config) { c.STUN = []string{"stun.example.org:3478"} }, "stun:"},
		{"stun as http", func(c *Config) { c.STUN = []string{"https://stun.example.org"} }, "stun:"},
		{"turn is not stun", func(c *Config) { c.STUN = []string{"turn:turn.example.org"} }, "stun:"},
		{"cert without key", func(c *Config) { c.TLSCert = "c.pem" }, "tls-cert and tls-key"},
		{"key without cert", func(c *Config) { c.TLSKey = "k.pem" }, "tls-cert and tls-key"},
		{"self-signed with cert", func(c *Config) { c.TLSSelfSigned, c.TLSCert, c.TLSKey = true, "c.pem", "k.pem" }, "tls-self-signed:"},
		{"unknown log level", func(c *Config) { c.LogLevel = "verbose" }, "log-level:"},
		{"log level is case-sensitive", func(c *Config) { c.LogLevel = "INFO" }, "log-level:"},
		{"empty log level", func(c *Config) { c.LogLevel = "" }, "log-level:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Default()
			tt.change(&cfg)
			err := cfg.Validate()
			switch {
			case tt.key == "" && err != nil:
				t.Errorf("Validate(%+v) = %v, want valid", cfg, err)
			case tt.key != "" && err == nil:
				t.Errorf("Validate(%+v) accepted it, want an error naming %s", cfg, tt.key)
			case tt.key != "" && !strings.HasPrefix(err.Error(), tt.key):
				t.Errorf("error %q does not start with the key %q", err, tt.key)
			}
		})
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	cfg := Default()
	cfg.HTTP, cfg.UDPPort, cfg.LogLevel = "nowhere", -5, "chatty"
	err := cfg.Validate()
	if err == nil {
		t.Fatal("accepted")
	}
	for _, key := range []string{"http:", "udp-port:", "log-level:"} {
		if !strings.Contains(err.Error(), key) {
			t.Errorf("error %q misses %s", err, key)
		}
	}
}

func TestEveryFieldHasAKey(t *testing.T) {
	typ := reflect.TypeOf(Config{})
	seen := map[string]bool{}
	for i := range typ.NumField() {
		f := typ.Field(i)
		key := f.Tag.Get("key")
		if key == "" || f.Tag.Get("help") == "" || seen[key] {
			t.Errorf("field %s: key %q (duplicate %v), help %q", f.Name, key, seen[key], f.Tag.Get("help"))
		}
		seen[key] = true
	}
	if got := EnvName("tls-self-signed"); got != "PODIUM_TLS_SELF_SIGNED" {
		t.Errorf("EnvName = %s", got)
	}
}
