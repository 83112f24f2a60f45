// Package web serves the browser client and accepts signaling WebSockets.
package web

import (
	"context"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"

	"github.com/coder/websocket"

	"github.com/podium-sfu/podium/internal/signal"
)

// Handler routes HTTP requests.
type Handler struct {
	Client fs.FS // the built web client (index.html, podium.js, podium.css)
	// Serve runs one signaling session on an accepted WebSocket until it ends.
	Serve func(ctx context.Context, conn *websocket.Conn)
	Log   *slog.Logger
}

// Routes returns the server's HTTP handler.
func (h *Handler) Routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ws", h.websocket)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("GET /", h.static)
	return mux
}

func (h *Handler) websocket(w http.ResponseWriter, r *http.Request) {
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		h.Log.Debug("websocket accept", "err", err, "remote", r.RemoteAddr)
		return
	}
	h.Serve(r.Context(), conn)
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
