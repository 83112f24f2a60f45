package web

import (
	"net"
	"net/http"
	"net/url"
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
		hd.Set("Content-Security-Policy", contentSecurityPolicy)
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Referrer-Policy", "no-referrer")
		hd.Set("X-Content-Type-Options", "nosniff")
		if h.Dev {
			if why := h.crossSite(r); why != "" {
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
func (h *Handler) crossSite(r *http.Request) string {
	if !h.localHost(r.Host) {
		return "in dev mode the server answers only to localhost, IP addresses and its --http host, not " + truncate(r.Host)
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		u, err := url.Parse(origin)
		if err != nil || u.Host == "" || !strings.EqualFold(u.Host, r.Host) {
			return "in dev mode cross-origin requests are refused (Origin " + truncate(origin) + ")"
		}
	}
	return ""
}

// localHost reports whether a Host header cannot have come from DNS rebinding:
// localhost, an IP address (rebinding needs a name the attacker controls), or
// the host --http names.
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
	return strings.EqualFold(host, h.HTTPHost)
}
