package config

import (
	"errors"
	"fmt"
	"net"
	"strings"
)

func (c *Config) validateMetrics() []error {
	var errs []error
	if c.MetricsToken != "" && (len(c.MetricsToken) < 16 || strings.ContainsAny(c.MetricsToken, " \t\r\n")) {
		errs = append(errs, errors.New("metrics-token: must be at least 16 characters without spaces"))
	}
	if c.MetricsHTTP != "" {
		if _, _, err := net.SplitHostPort(c.MetricsHTTP); err != nil {
			errs = append(errs, fmt.Errorf("metrics-http: %q is not address:port: %w", c.MetricsHTTP, err))
		}
	}
	return errs
}
