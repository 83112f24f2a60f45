// Package web serves the browser client and accepts signaling WebSockets.
package web

import (
	"context"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"strings"

	"github.com/coder/websocket"

	"github.com/podium-sfu/podium/internal/signal"
)

// Handler routes HTTP requests.
type Handler struct {
	Client fs.FS // the built web client (index.html, podium.js, podium.css)
	// Serve runs one signaling session on an accepted WebSocket from the client
	// at remote (an IP address) until it ends; hints are what its URL said.
	Serve func(ctx context.Context, conn *websocket.Conn, remote string, hints Hints)
	Log   *slog.Logger
	// TrustProxy takes the client address from X-Forwarded-For.
	TrustProxy bool
	// Dev (dev mode) answers only requests that cannot come from another site's
	// page: Host localhost, an IP address or one of HTTPHosts (the hosts
	// --http and --public-url name), and an Origin, if any, of this server.
	Dev       bool
	HTTPHosts []string
	// Ready reports whether the server takes new participants, and why not
	// (/readyz); nil means always.
	Ready func() (bool, string)
	// Metrics serves /metrics (the Prometheus exposition); nil disables it.
	Metrics http.Handler
	// Admin is the admin API (/api/v1/); nil disables it.
	Admin http.Handler
	// Broadcast is WHIP ingest and WHEP playback (/whip/, /whep/:
	// docs/broadcast.md); nil disables them.
	Broadcast http.Handler
	// ClusterHosts, in a cluster, lists the other nodes' host:port: a page
	// one of them served may open this node's WebSocket (docs/cluster.md).
	ClusterHosts func() []string
}

// Routes returns the server's HTTP handler.
func (h *Handler) Routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ws", h.websocket)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("GET /readyz", h.ready)
	if h.Metrics != nil {
		mux.Handle("GET /metrics", h.Metrics)
	}
	if h.Admin != nil {
		for _, method := range []string{"GET", "POST", "PUT", "PATCH", "DELETE"} {
			mux.Handle(method+" /api/v1/", h.Admin)
		}
	}
	if h.Broadcast != nil {
		for _, method := range []string{"GET", "POST", "PATCH", "DELETE", "OPTIONS"} {
			mux.Handle(method+" /whip/", h.Broadcast)
			mux.Handle(method+" /whep/", h.Broadcast)
		}
	}
	mux.HandleFunc("GET /", h.static)
	return h.guard(mux)
}

func (h *Handler) websocket(w http.ResponseWriter, r *http.Request) {
	hints, err := wsHints(r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	// net/http clears its read and write deadlines when the connection is
	// hijacked: a session lasts as long as the call (TestWebSocketOutlivesHTTPTimeouts).
	var opts *websocket.AcceptOptions
	if peers := h.clusterHosts(); len(peers) > 0 {
		patterns := make([]string, len(peers)) // path.Match patterns: escape IPv6 brackets
		for i, p := range peers {
			patterns[i] = strings.NewReplacer("[", `\[`, "]", `\]`, "*", `\*`, "?", `\?`).Replace(p)
		}
		opts = &websocket.AcceptOptions{OriginPatterns: patterns}
	}
	conn, err := websocket.Accept(w, r, opts)
	if err != nil {
		h.Log.Debug("websocket accept", "err", err, "remote", r.RemoteAddr)
		return
	}
	h.Serve(r.Context(), conn, ClientIP(r, h.TrustProxy), hints)
}

// ready answers load balancers: 200 while the server takes participants, 503
// with the reason (draining) when it does not.
func (h *Handler) ready(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if h.Ready != nil {
		if ok, why := h.Ready(); !ok {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, why+"\n")
			return
		}
	}
	_, _ = io.WriteString(w, "ready\n")
}

// ClientIP is the address a request came from: the TCP peer, or with trustProxy
// the last address in X-Forwarded-For (the one our reverse proxy appended).
func ClientIP(r *http.Request, trustProxy bool) string {
	if trustProxy {
		if xff := r.Header.Values("X-Forwarded-For"); len(xff) > 0 {
			all := strings.Split(xff[len(xff)-1], ",")
			if ip := net.ParseIP(strings.TrimSpace(all[len(all)-1])); ip != nil {
				return ip.String()
			}
		}
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// static serves client assets, and index.html for "/" and every "/<room>" so that
// room links work.
func (h *Handler) static(w http.ResponseWriter, r *http.Request) {
	path := strings.TrimPrefix(r.URL.Path, "/")
	if path != "" && strings.Contains(path, ".") && !strings.Contains(path, "/") {
		if _, err := fs.Stat(h.Client, path); err == nil {
			http.ServeFileFS(w, r, h.Client, path)
			return
		}
	}
	if path != "" && !signal.ValidRoom(path) {
		http.NotFound(w, r)
		return
	}
	page, err := fs.ReadFile(h.Client, "index.html")
	if err != nil {
		http.Error(w, "web client not built: run `make build`", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write(page)
}
