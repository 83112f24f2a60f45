// Package limit holds the rate limiters guarding the server against floods: a
// token bucket (golang.org/x/time/rate, always given the time as an argument)
// and a bounded set of buckets keyed by client address, which the library has
// not.
package limit

import (
	"net"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Bucket is a token bucket: it holds at most burst tokens and gains rate tokens
// per second; each allowed event takes one. The zero Bucket allows nothing; a
// Bucket with rate <= 0 allows everything.
type Bucket struct {
	lim *rate.Limiter
}

// NewBucket returns a full bucket.
func NewBucket(r float64, burst int) Bucket {
	l := rate.Limit(r)
	if r <= 0 && burst > 0 {
		l = rate.Inf
	}
	return Bucket{lim: rate.NewLimiter(l, burst)}
}

// Allow takes a token at now if there is one.
func (b Bucket) Allow(now time.Time) bool {
	return b.lim != nil && b.lim.AllowN(now, 1)
}

// AllowN takes n tokens at now if there are that many (a bucket of bytes:
// n is a packet's size); it takes none otherwise.
func (b Bucket) AllowN(now time.Time, n int) bool {
	return b.lim != nil && b.lim.AllowN(now, n)
}

// full reports whether the bucket is back at its burst at now (nothing to remember).
func (b Bucket) full(now time.Time) bool {
	return b.lim.TokensAt(now) >= float64(b.lim.Burst())
}

// PerKey is one Bucket per key (a client IP), safe for concurrent use. Buckets
// that refilled completely are forgotten, so memory stays bounded by the clients
// active within one refill period.
type PerKey struct {
	rate  float64
	burst int
	mu    sync.Mutex
	keys  map[string]Bucket
	sweep time.Time // when idle buckets were last dropped
}

// NewPerKey allows each key burst events at once and rate per second after that;
// rate <= 0 disables the limit.
func NewPerKey(rate float64, burst int) *PerKey {
	return &PerKey{rate: rate, burst: burst, keys: map[string]Bucket{}}
}

// PerMinute allows n events per key per minute (n <= 0: unlimited).
func PerMinute(n int) *PerKey { return NewPerKey(float64(n)/60, n) }

// Allow takes a token from key's bucket at now.
func (p *PerKey) Allow(key string, now time.Time) bool {
	if p == nil || p.rate <= 0 {
		return true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if now.Sub(p.sweep) > time.Minute {
		p.sweep = now
		for k, b := range p.keys {
			if b.full(now) {
				delete(p.keys, k)
			}
		}
	}
	b, ok := p.keys[key]
	if !ok {
		b = NewBucket(p.rate, p.burst)
		p.keys[key] = b
	}
	return b.Allow(now)
}

// Len is the number of keys remembered.
func (p *PerKey) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.keys)
}

// AddressKey is the key a client address is limited under: an IPv4 address as
// is, an IPv6 address by its /64 prefix (one customer's network, which can hold
// any number of addresses). Anything else is its own key.
func AddressKey(addr string) string {
	ip := net.ParseIP(addr)
	if ip == nil || ip.To4() != nil {
		return addr
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}
