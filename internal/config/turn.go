package config

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// TURN reports whether the embedded TURN server runs (one of its ports set).
func (c *Config) TURN() bool { return c.TURNUDPPort != 0 || c.TURNTCPPort != 0 || c.TURNTLSPort != 0 }

// TURNListenIP is the address the embedded TURN server and its relays listen
// on: http's address ("" when http listens on all of them).
func (c *Config) TURNListenIP() string {
	host, _, _ := net.SplitHostPort(c.HTTP)
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		return ""
	}
	return host
}

// TURNRelayIP is the address announced for relays: turn-public-ip, else the
// first public-ip, else http's address; nil when none of them is an IP.
func (c *Config) TURNRelayIP() net.IP {
	if c.TURNPublicIP != "" {
		return net.ParseIP(c.TURNPublicIP)
	}
	if len(c.PublicIPs) > 0 {
		pub, _, _ := strings.Cut(c.PublicIPs[0], "/")
		return net.ParseIP(pub)
	}
	if ip := net.ParseIP(c.TURNListenIP()); ip != nil {
		return ip
	}
	return nil
}

// TURNURLHost is the host in the embedded server's URLs: turn-host, else the relay IP.
func (c *Config) TURNURLHost() string {
	if c.TURNHost != "" {
		return c.TURNHost
	}
	if ip := c.TURNRelayIP(); ip != nil {
		return ip.String()
	}
	return ""
}

// TURNRelayRange parses turn-relay-ports; call it on a validated configuration.
func (c *Config) TURNRelayRange() (lo, hi uint16) {
	lo, hi, _ = parsePortRange(c.TURNRelayPorts)
	return lo, hi
}

// TURNAllowPrefixes parses turn-allow-peer (an address alone is its /32 or /128).
func (c *Config) TURNAllowPrefixes() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range c.TURNAllowPeer {
		if p, err := parsePrefix(s); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// ICEServerNeedsCredentials reports whether url is a TURN URL (turn:, turns:).
func ICEServerNeedsCredentials(url string) bool {
	return strings.HasPrefix(url, "turn:") || strings.HasPrefix(url, "turns:")
}

func parsePrefix(s string) (netip.Prefix, error) {
	if !strings.Contains(s, "/") {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return netip.Prefix{}, err
		}
		return netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()), nil
	}
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	return p.Masked(), nil
}

func parsePortRange(s string) (lo, hi uint16, err error) {
	a, b, ok := strings.Cut(s, "-")
	if !ok {
		return 0, 0, errors.New("want MIN-MAX")
	}
	l, err1 := strconv.ParseUint(strings.TrimSpace(a), 10, 16)
	h, err2 := strconv.ParseUint(strings.TrimSpace(b), 10, 16)
	if err1 != nil || err2 != nil || l < 1024 || h < l {
		return 0, 0, errors.New("want MIN-MAX with 1024 <= MIN <= MAX <= 65535")
	}
	return uint16(l), uint16(h), nil
}

func (c *Config) validateTURN() []error {
	var errs []error
	for _, p := range []struct {
		key  string
		port int
	}{{"turn-udp-port", c.TURNUDPPort}, {"turn-tcp-port", c.TURNTCPPort}, {"turn-tls-port", c.TURNTLSPort}} {
		if p.port < 0 || p.port > 65535 {
			errs = append(errs, fmt.Errorf("%s: %d out of range", p.key, p.port))
		}
	}
	if c.TURNUDPPort != 0 && c.TURNUDPPort == c.UDPPort {
		errs = append(errs, fmt.Errorf("turn-udp-port: %d is udp-port too", c.TURNUDPPort))
	}
	if c.TURNTCPPort != 0 && (c.TURNTCPPort == c.TCPPort || c.TURNTCPPort == c.TURNTLSPort) {
		errs = append(errs, fmt.Errorf("turn-tcp-port: %d is tcp-port or turn-tls-port too", c.TURNTCPPort))
	}
	if c.TURNTLSPort != 0 && !c.TLS() {
		errs = append(errs, errors.New("turn-tls-port: needs tls-cert and tls-key (or tls-self-signed, which browsers will not trust for turns:)"))
	}
	if c.TURNSecret != "" && len(c.TURNSecret) < 16 {
		errs = append(errs, errors.New("turn-secret: at least 16 characters"))
	}
	if c.TURNCredentialTTL < time.Minute || c.TURNCredentialTTL > 7*24*time.Hour {
		errs = append(errs, fmt.Errorf("turn-credential-ttl: %v; between 1m and 168h", c.TURNCredentialTTL))
	}
	if c.TURNMaxLifetime < time.Minute {
		errs = append(errs, fmt.Errorf("turn-max-lifetime: %v; at least 1m", c.TURNMaxLifetime))
	}
	if c.TURNMaxAllocations < 0 {
		errs = append(errs, errors.New("turn-max-allocations: negative; use 0 for unlimited"))
	}
	if c.TURNBandwidth < 0 {
		errs = append(errs, errors.New("turn-bandwidth: negative; use 0 for unlimited"))
	}
	if _, _, err := parsePortRange(c.TURNRelayPorts); err != nil {
		errs = append(errs, fmt.Errorf("turn-relay-ports: %q: %w", c.TURNRelayPorts, err))
	}
	for _, s := range c.TURNAllowPeer {
		if _, err := parsePrefix(s); err != nil {
			errs = append(errs, fmt.Errorf("turn-allow-peer: %q is not an address range such as 10.1.0.0/16", s))
		}
	}
	if c.TURNPublicIP != "" && net.ParseIP(c.TURNPublicIP) == nil {
		errs = append(errs, fmt.Errorf("turn-public-ip: %q is not an IP address", c.TURNPublicIP))
	}
	if strings.ContainsAny(c.TURNHost, " /?#@[]") {
		errs = append(errs, fmt.Errorf("turn-host: %q is not a host name or IP address", c.TURNHost))
	}
	if c.TURN() {
		if c.TURNRealm == "" {
			errs = append(errs, errors.New("turn-realm: empty"))
		}
		if c.TURNRelayIP() == nil {
			errs = append(errs, errors.New("turn-public-ip: needed when http listens on all addresses and no public-ip is set: the address clients reach relays at"))
		}
	}
	if (c.ICEUsername == "") != (c.ICECredential == "") {
		errs = append(errs, errors.New("ice-username and ice-credential must be given together"))
	}
	for _, u := range c.ICEServers {
		switch {
		case ICEServerNeedsCredentials(u):
			if c.ICEUsername == "" && c.TURNSecret == "" {
				errs = append(errs, fmt.Errorf("ice-server: %q needs ice-username and ice-credential, or turn-secret shared with that server", u))
			}
		case strings.HasPrefix(u, "stun:"), strings.HasPrefix(u, "stuns:"):
		default:
			errs = append(errs, fmt.Errorf("ice-server: %q must start with stun:, stuns:, turn: or turns:", u))
		}
	}
	return errs
}
