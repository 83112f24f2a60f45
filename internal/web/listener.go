package web

import (
	"net"
	"sync"

	"github.com/podium-sfu/podium/internal/limit"
)

// LimitConns caps the connections open at once from one peer address (IPv6: per
// /64, as limit.AddressKey) at max; 0 means unlimited. A connection beyond the
// cap is closed as soon as it is accepted, so one address cannot hold the
// process's file descriptors. The key is the socket's peer, never a forwarded
// header: behind a reverse proxy every connection is the proxy's, so set the
// cap above what the proxy opens.
func LimitConns(ln net.Listener, max int) net.Listener {
	if max <= 0 {
		return ln
	}
	return &connLimiter{Listener: ln, max: max, open: map[string]int{}}
}

type connLimiter struct {
	net.Listener
	max  int
	mu   sync.Mutex
	open map[string]int // connections open per address key
}

func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		key := addressKey(c.RemoteAddr())
		if l.take(key) {
			return &countedConn{Conn: c, release: func() { l.release(key) }}, nil
		}
		_ = c.Close()
	}
}

func (l *connLimiter) take(key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[key] >= l.max {
		return false
	}
	l.open[key]++
	return true
}

func (l *connLimiter) release(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open[key]--; l.open[key] <= 0 {
		delete(l.open, key)
	}
}

func addressKey(a net.Addr) string {
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		host = a.String()
	}
	return limit.AddressKey(host)
}

// countedConn gives its slot back once, however often it is closed.
type countedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
