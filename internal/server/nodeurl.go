package server

import (
	"net"
	"net/netip"
	"net/url"
	"strings"

	"github.com/podium-sfu/podium/internal/config"
)

// nodeURL is the URL the cluster names this node by — in redirects, in the
// fallbacks a welcome carries, in the pages allowed to open its WebSocket:
// --public-url, else listen (the address --http bound) with a wildcard host
// replaced by the first --public-ip, else by the address this machine sends
// from. A wildcard in a redirect would send a browser to its own machine.
func nodeURL(cfg config.Config, listen string) string {
	if cfg.PublicURL != "" {
		if u, err := url.Parse(cfg.PublicURL); err == nil { // validated by config
			if !strings.HasSuffix(u.Path, "/") {
				u.Path += "/"
			}
			return u.String()
		}
	}
	u, err := url.Parse(listen)
	if err != nil {
		return listen
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		return listen
	}
	if a, err := netip.ParseAddr(host); err != nil || !a.IsUnspecified() {
		return listen
	}
	ip := outgoingIP()
	for _, p := range cfg.PublicIPs {
		pub, _, _ := strings.Cut(p, "/") // PUBLIC/LOCAL
		if a, err := netip.ParseAddr(pub); err == nil {
			ip = a.Unmap()
			break
		}
	}
	u.Host = net.JoinHostPort(ip.String(), port)
	return u.String()
}

// urlHost is the host a URL names, without its port ("" if none).
func urlHost(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

// outgoingIP is the address this machine sends from by default (no packet
// is sent), or the unspecified address when it has no route.
func outgoingIP() netip.Addr {
	if c, err := net.Dial("udp", "192.0.2.1:9"); err == nil {
		defer c.Close()
		if a, ok := netip.AddrFromSlice(c.LocalAddr().(*net.UDPAddr).IP); ok {
			return a.Unmap()
		}
	}
	return netip.IPv4Unspecified()
}
