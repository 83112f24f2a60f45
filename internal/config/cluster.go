package config

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	"github.com/podium-sfu/podium/internal/auth"
)

// validateCluster checks the cluster keys (docs/cluster.md).
func (c *Config) validateCluster() []error {
	var errs []error
	if !auth.ValidRegion(c.Region) {
		errs = append(errs, fmt.Errorf("region: %q must be 1 to 32 of a-z, A-Z, 0-9, - and _", c.Region))
	}
	if c.PublicURL != "" {
		if err := publicURL(c.PublicURL); err != nil {
			errs = append(errs, fmt.Errorf("public-url: %q: %w", c.PublicURL, err))
		}
	}
	if c.ClusterListen != "" {
		if err := hostPort(c.ClusterListen); err != nil {
			errs = append(errs, fmt.Errorf("cluster-listen: %q: %w", c.ClusterListen, err))
		}
	}
	for _, p := range c.ClusterPeers {
		u, err := url.Parse(p)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("cluster-peers: %q: %w", p, err))
		case u.Scheme != "nats" && u.Scheme != "nats-route" && u.Scheme != "tls":
			errs = append(errs, fmt.Errorf("cluster-peers: %q must be nats://host:port", p))
		case hostPort(u.Host) != nil:
			errs = append(errs, fmt.Errorf("cluster-peers: %q: no host:port", p))
		}
	}
	if len(c.ClusterPeers) > 0 && c.ClusterListen == "" {
		errs = append(errs, fmt.Errorf("cluster-peers: needs cluster-listen (this node's own route listener)"))
	}
	if c.NATS != "" {
		u, err := url.Parse(c.NATS)
		if err != nil || (u.Scheme != "nats" && u.Scheme != "tls" && u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" {
			errs = append(errs, fmt.Errorf("nats: %q is not a NATS URL such as nats://host:4222", redactURL(c.NATS)))
		}
	}
	tlsSet := 0
	for _, f := range []string{c.ClusterTLSCert, c.ClusterTLSKey, c.ClusterTLSCA} {
		if f != "" {
			tlsSet++
		}
	}
	if tlsSet != 0 && tlsSet != 3 {
		errs = append(errs, fmt.Errorf("cluster-tls-cert, cluster-tls-key and cluster-tls-ca must be given together"))
	}
	if tlsSet == 3 && c.ClusterListen == "" {
		errs = append(errs, fmt.Errorf("cluster-tls-cert: needs cluster-listen"))
	}
	if c.RelayPort < 0 || c.RelayPort > 65535 {
		errs = append(errs, fmt.Errorf("relay-port: %d out of range", c.RelayPort))
	} else if c.RelayPort != 0 && c.RelayPort == c.UDPPort {
		errs = append(errs, fmt.Errorf("relay-port: %d is udp-port too; give the relay a port of its own", c.RelayPort))
	}
	return errs
}

// Clustered reports whether the node is one of several (routes or an external NATS).
func (c *Config) Clustered() bool { return c.ClusterListen != "" || c.NATS != "" }

func hostPort(s string) error {
	_, port, err := net.SplitHostPort(s)
	if err != nil {
		return err
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return fmt.Errorf("bad port %q", port)
	}
	return nil
}

func redactURL(s string) string {
	if u, err := url.Parse(s); err == nil {
		return u.Redacted()
	}
	if i := strings.Index(s, "@"); i >= 0 {
		return "…" + s[i:]
	}
	return s
}

// publicURL checks a node's public URL: http or https, a host, nothing a
// redirect could not carry.
func publicURL(s string) error {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return err
	case u.Scheme != "http" && u.Scheme != "https":
		return errors.New("must start with https:// or http://")
	case u.Host == "" || u.Hostname() == "":
		return errors.New("has no host")
	case u.User != nil, u.RawQuery != "", u.Fragment != "", u.Opaque != "":
		return errors.New("must be scheme://host[:port][/path] only")
	}
	if a, err := netip.ParseAddr(u.Hostname()); err == nil && a.IsUnspecified() {
		return errors.New("names a wildcard address; browsers cannot reach it")
	}
	return nil
}
