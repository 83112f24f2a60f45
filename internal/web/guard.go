package web

import (
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// contentSecurityPolicy allows the page its own script, style and connections
// (same-origin ws: and wss: included) and nothing else; it may not be framed.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// guard sets the security headers on every response and, in dev mode, refuses
// what a page on another site could send: a Host naming another site (DNS
// rebinding: the attacker's name resolved to this server) or an Origin of
// another site. With access control on, tokens do that job.
func (h *Handler) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		peers := h.clusterHosts()
		hd.Set("Content-Security-Policy", csp(peers))
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("X-Content-Type-Options", "nosniff")
		if h.Dev {
			if why := h.crossSite(r, peers); why != "" {
				if strings.HasPrefix(r.URL.Path, "/api/") {
					apiError(w, http.StatusForbidden, "forbidden", why)
				} else {
					http.Error(w, "forbidden: "+why, http.StatusForbidden)
				}
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// crossSite says why r may come from another site's page, or "" if it cannot.
func (h *Handler) crossSite(r *http.Request, peers []string) string {
	if !h.localHost(r.Host) {
		return "in dev mode the server answers only to localhost, IP addresses and its --http host, not " + truncate(r.Host)
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		u, err := url.Parse(origin)
		if err != nil || u.Host == "" || !strings.EqualFold(u.Host, r.Host) && !containsFold(peers, u.Host) {
			return "in dev mode cross-origin requests are refused (Origin " + truncate(origin) + ")"
		}
	}
	return ""
}

// localHost reports whether a Host header cannot have come from DNS rebinding:
// localhost, an IP address (rebinding needs a name the attacker controls), or
// a host --http or --public-url names.
func (h *Handler) localHost(hostport string) bool {
	host := hostport
	if hp, _, err := net.SplitHostPort(hostport); err == nil {
		host = hp
	}
	host = strings.ToLower(strings.TrimSuffix(strings.Trim(host, "[]"), "."))
	switch {
	case host == "":
		return false
	case host == "localhost", net.ParseIP(host) != nil:
		return true
	}
	return containsFold(h.HTTPHosts, host)
}

// clusterHosts are the host:port of the cluster's other nodes (none for a
// single node): their pages may open this node's WebSocket (a redirect). A
// node on a loopback address is also named by the loopback's other names
// (localhost, 127.0.0.1, [::1]): a page opened at http://localhost:7880 on
// a machine running several nodes comes from the node the cluster calls
// 127.0.0.1:7880, and no other site can serve a loopback origin.
func (h *Handler) clusterHosts() []string {
	if h.ClusterHosts == nil {
		return nil
	}
	hosts := slices.Clone(h.ClusterHosts()) // the aliases are appended
	for _, hp := range hosts {
		host, port, err := net.SplitHostPort(hp)
		if err != nil || !loopbackName(host) {
			continue
		}
		for _, alias := range []string{"localhost", "127.0.0.1", "::1"} {
			if a := net.JoinHostPort(alias, port); !containsFold(hosts, a) {
				hosts = append(hosts, a)
			}
		}
	}
	return hosts
}

// loopbackName reports whether host is localhost or a loopback address.
func loopbackName(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// csp is the Content-Security-Policy, letting the page also connect to the
// cluster's other nodes (a redirect's WebSocket).
func csp(peers []string) string {
	if len(peers) == 0 {
		return contentSecurityPolicy
	}
	extra := ""
	for _, p := range peers {
		extra += " ws://" + p + " wss://" + p
	}
	return strings.Replace(contentSecurityPolicy, "connect-src 'self'", "connect-src 'self'"+extra, 1)
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}
