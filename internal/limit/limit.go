// Package limit holds the rate limiters guarding the server against floods: a
// token bucket (pure: time comes in as an argument) and a set of buckets keyed by
// client address.
package limit

import (
	"net"
	"sync"
	"time"
)

// Bucket is a token bucket: it holds at most Burst tokens and gains Rate tokens
// per second; each allowed event takes one. The zero Bucket allows nothing; a
// Bucket with Rate <= 0 allows everything. Not safe for concurrent use.
type Bucket struct {
	rate   float64 // tokens per second
	burst  float64
	tokens float64
	last   time.Time
}

// NewBucket returns a full bucket.
func NewBucket(rate float64, burst int) Bucket {
	return Bucket{rate: rate, burst: float64(burst), tokens: float64(burst)}
}

// Allow takes a token at now if there is one.
func (b *Bucket) Allow(now time.Time) bool {
	if b.rate <= 0 && b.burst > 0 {
		return true
	}
	b.refill(now)
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// full reports whether the bucket is back at its burst at now (nothing to remember).
func (b *Bucket) full(now time.Time) bool {
	b.refill(now)
	return b.tokens >= b.burst
}

func (b *Bucket) refill(now time.Time) {
	if !b.last.IsZero() && now.After(b.last) {
		b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
	}
	if b.last.IsZero() || now.After(b.last) {
		b.last = now
	}
}

// PerKey is one Bucket per key (a client IP), safe for concurrent use. Buckets
// that refilled completely are forgotten, so memory stays bounded by the clients
// active within one refill period.
type PerKey struct {
	rate  float64
	burst int
	mu    sync.Mutex
	keys  map[string]*Bucket
	sweep time.Time // when idle buckets were last dropped
}

// NewPerKey allows each key burst events at once and rate per second after that;
// rate <= 0 disables the limit.
func NewPerKey(rate float64, burst int) *PerKey {
	return &PerKey{rate: rate, burst: burst, keys: map[string]*Bucket{}}
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
		nb := NewBucket(p.rate, p.burst)
		b = &nb
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
