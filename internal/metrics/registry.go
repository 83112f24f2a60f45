// Package metrics adapts Podium to github.com/prometheus/client_golang: a
// private registry holding the Go runtime and process collectors, and the
// /metrics handler with its optional bearer token. The server's own families
// are collectors that read existing counters at scrape time, so the packet path
// does no work for metrics.
package metrics

import (
	"crypto/sha256"
	"crypto/subtle"
	"log/slog"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// NewRegistry is a registry of its own (never the global default, so parallel
// servers and tests do not share state) with the Go runtime and process
// collectors, the runtime families earlier versions exported, and cs. It fails
// when two collectors describe the same metric.
func NewRegistry(cs ...prometheus.Collector) (*prometheus.Registry, error) {
	reg := prometheus.NewRegistry()
	std := []prometheus.Collector{
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		legacyRuntime{},
	}
	for _, c := range append(std, cs...) {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return reg, nil
}

// Handler serves g's exposition in the format the scraper asks for (text by
// default). With a token, only requests carrying `Authorization: Bearer
// <token>` are answered; others get 401.
func Handler(g prometheus.Gatherer, token string, log *slog.Logger) http.Handler {
	h := promhttp.HandlerFor(g, promhttp.HandlerOpts{
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelError),
		// A collector that fails (say, /proc unreadable) costs its own
		// families, not the whole scrape.
		ErrorHandling: promhttp.ContinueOnError,
	})
	want := sha256.Sum256([]byte(token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		if token != "" {
			// Hashing first keeps the comparison constant-time whatever the lengths.
			got := sha256.Sum256([]byte(bearer(r)))
			if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="metrics"`)
				http.Error(w, "metrics: a bearer token is required (metrics-token)", http.StatusUnauthorized)
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// bearer is the credential of an Authorization header of the Bearer scheme,
// whose name is case-insensitive (RFC 9110 §11.1); "" otherwise.
func bearer(r *http.Request) string {
	scheme, cred, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(cred)
}
