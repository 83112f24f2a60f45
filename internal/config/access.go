package config

import (
	"fmt"
	"net"
	"time"

	"github.com/podium-sfu/podium/internal/auth"
)

// Bounds of the limits that cannot be switched off.
const (
	minMessageBytes = 4 << 10
	maxMessageBytes = 16 << 20
	maxDrainTimeout = 24 * time.Hour
	// minMediaTimeout leaves a slow client time for ICE and DTLS.
	minMediaTimeout = 5 * time.Second
)

// DevMode reports whether rooms are open without tokens: asked for with dev, or
// no auth-keys given (Validate allows that only on a loopback address).
func (c *Config) DevMode() bool { return c.Dev || len(c.AuthKeys) == 0 }

// Keys parses auth-keys; call it on a validated configuration.
func (c *Config) Keys() []auth.Key {
	keys := make([]auth.Key, 0, len(c.AuthKeys))
	for _, s := range c.AuthKeys {
		if k, err := auth.ParseKey(s); err == nil {
			keys = append(keys, k)
		}
	}
	return keys
}

// Loopback reports whether http binds a loopback address only.
func (c *Config) Loopback() bool {
	host, _, err := net.SplitHostPort(c.HTTP)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (c *Config) validateAccess() []error {
	var errs []error
	seen := map[string]bool{}
	for _, s := range c.AuthKeys {
		k, err := auth.ParseKey(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("auth-keys: %w", err))
			continue
		}
		if seen[k.ID] {
			errs = append(errs, fmt.Errorf("auth-keys: key id %q given twice", k.ID))
		}
		seen[k.ID] = true
	}
	if len(c.AuthKeys) == 0 && !c.Dev && !c.Loopback() {
		errs = append(errs, fmt.Errorf("auth-keys: none given, and http %q is not a loopback address: anyone reaching it "+
			"could join any room. Give auth-keys (then mint tokens with `podium token`), or set dev to run open rooms on purpose", c.HTTP))
	}
	return errs
}

func (c *Config) validateLimits() []error {
	var errs []error
	for _, l := range []struct {
		key string
		v   int
	}{{"max-rooms", c.MaxRooms}, {"max-participants", c.MaxParticipants}, {"max-tracks", c.MaxTracks},
		{"joins-per-ip", c.JoinsPerIP}, {"signaling-rate", c.SignalingRate},
		{"rooms-per-ip", c.RoomsPerIP}, {"max-conns-per-ip", c.MaxConnsPerIP}} {
		if l.v < 0 {
			errs = append(errs, fmt.Errorf("%s: %d is negative; use 0 for unlimited", l.key, l.v))
		}
	}
	if c.SignalingRate > 0 && c.SignalingBurst < 1 {
		errs = append(errs, fmt.Errorf("signaling-burst: %d; must be at least 1 while signaling-rate is set", c.SignalingBurst))
	}
	if c.MaxMessageBytes < minMessageBytes || c.MaxMessageBytes > maxMessageBytes {
		errs = append(errs, fmt.Errorf("max-message-bytes: %d out of range %d..%d", c.MaxMessageBytes, minMessageBytes, maxMessageBytes))
	}
	if c.MediaTimeout < minMediaTimeout || c.MediaTimeout > time.Hour {
		errs = append(errs, fmt.Errorf("media-timeout: %v out of range %v..1h", c.MediaTimeout, minMediaTimeout))
	}
	if c.HTTPIdleTimeout < time.Second || c.HTTPIdleTimeout > time.Hour {
		errs = append(errs, fmt.Errorf("http-idle-timeout: %v out of range 1s..1h", c.HTTPIdleTimeout))
	}
	if c.DrainTimeout < 0 || c.DrainTimeout > maxDrainTimeout {
		errs = append(errs, fmt.Errorf("drain-timeout: %v out of range 0s..%v", c.DrainTimeout, maxDrainTimeout))
	}
	return errs
}
