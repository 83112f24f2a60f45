package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/podium-sfu/podium/internal/signal"
)

// RedirectError is Dial's answer when the node sent the client to another
// bridge (a cluster: docs/cluster.md) instead of welcoming it.
type RedirectError struct{ Redirect signal.Redirect }

func (e *RedirectError) Error() string {
	return fmt.Sprintf("redirected to %s (%s)", e.Redirect.URL, e.Redirect.Reason)
}

// maxRedirects is how many redirects in a row Join follows, as the web client.
const maxRedirects = 4

// Join joins through the first of urls that welcomes the client, following
// redirects, as the web client does: a failover passes the lost bridge's URL
// and then the fallbacks of its welcome (State.Fallbacks). opts.URL is ignored.
func Join(ctx context.Context, opts Options, urls ...string) (*Client, error) {
	var errs []error
	for _, u := range urls {
		for range maxRedirects + 1 {
			opts.URL = u
			c, err := Dial(ctx, opts)
			if err == nil {
				return c, nil
			}
			var rd *RedirectError
			if !errors.As(err, &rd) {
				errs = append(errs, err)
				break
			}
			u = rd.Redirect.URL
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("no node welcomed the client: %w", errors.Join(errs...))
}

// Failover rejoins after the session at bridge was lost, as the web client
// does (web/src/protocol/redirect.ts, reconnectUrl): attempt n waits
// min(300 ms·2^(n-1), 3 s), then tries the bridge first, each of the lost
// welcome's fallbacks in turn, then the bridge again. Redirects are followed.
func Failover(ctx context.Context, opts Options, bridge string, fallbacks []string) (*Client, error) {
	for attempt := 1; ; attempt++ {
		delay := min(300*time.Millisecond<<(attempt-1), 3*time.Second)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(delay):
		}
		if c, err := Join(ctx, opts, ReconnectURL(bridge, fallbacks, attempt)); err == nil {
			return c, nil
		}
	}
}

// ReconnectURL is the URL of reconnect attempt n (1, 2, …): the bridge, then
// each fallback in turn, then the bridge again (as redirect.ts's).
func ReconnectURL(bridge string, fallbacks []string, attempt int) string {
	if attempt <= 1 || len(fallbacks) == 0 {
		return bridge
	}
	i := (attempt - 2) % (len(fallbacks) + 1)
	if i < len(fallbacks) {
		return fallbacks[i]
	}
	return bridge
}
