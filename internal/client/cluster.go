package client

import (
	"context"
	"errors"
	"fmt"

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
