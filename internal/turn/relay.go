package turn

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	pturn "github.com/pion/turn/v5"

	"github.com/podium-sfu/podium/internal/limit"
)

var (
	errQuota       = errors.New("turn: allocation quota reached")
	errTCPRelay    = errors.New("turn: TCP relays (RFC 6062) are not offered")
	errRefused     = errors.New("turn: peer address refused")
	errNoRelayPort = errors.New("turn: no free relay port")
	errPort        = errors.New("turn: requested relay port outside the relay range")
)

// counters are the server's totals; the metrics read them at scrape time.
type counters struct {
	allocations      atomic.Int64
	allocationsTotal atomic.Uint64
	toPeers          atomic.Uint64 // bytes relayed from clients to peers
	fromPeers        atomic.Uint64 // bytes relayed from peers to clients
	overBandwidth    atomic.Uint64 // bytes dropped over an allocation's bandwidth
	refusedPerms     atomic.Uint64 // CreatePermission / ChannelBind refused
	refusedPackets   atomic.Uint64 // packets to or from a refused address
	quota            atomic.Uint64 // allocations refused over the per-user quota
	expired          atomic.Uint64 // allocations closed at the lifetime cap
	authMalformed    atomic.Uint64
	authExpired      atomic.Uint64
	authIntegrity    atomic.Uint64 // wrong password (or realm)
}

// relays creates every allocation's relay socket (pion's RelayAddressGenerator)
// and wraps it in a relayConn that enforces the policy, the bandwidth and the
// lifetime; it counts allocations per user for the quota.
type relays struct {
	policy      *Policy
	bind        string // IP relays listen on ("" or unspecified: all)
	public      net.IP // address announced in XOR-RELAYED-ADDRESS
	min, max    uint16
	perUser     int
	maxLifetime time.Duration
	bytesPerSec float64 // 0: unlimited
	burst       int
	now         func() time.Time
	c           *counters
	live        *PortSet // the ports of open relays (the policy reads it)

	mu    sync.Mutex
	users map[string]int // allocations per user
}

var _ pturn.RelayAddressGenerator = (*relays)(nil)

func (r *relays) Validate() error {
	if r.public == nil {
		return errors.New("turn: no relay address")
	}
	if r.min == 0 || r.max < r.min {
		return fmt.Errorf("turn: bad relay port range %d-%d", r.min, r.max)
	}
	return nil
}

// underQuota reports whether user may have one more allocation (pion answers
// 486 Allocation Quota Reached otherwise). AllocatePacketConn takes the slot.
func (r *relays) underQuota(user string) bool {
	if r.perUser <= 0 {
		return true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.users[user] < r.perUser
}

func (r *relays) take(user string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.perUser > 0 && r.users[user] >= r.perUser {
		return false
	}
	r.users[user]++
	return true
}

func (r *relays) release(user string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.users[user]--; r.users[user] <= 0 {
		delete(r.users, user)
	}
}

// AllocatePacketConn opens a UDP relay in the relay port range.
func (r *relays) AllocatePacketConn(conf pturn.AllocateListenerConfig) (net.PacketConn, net.Addr, error) {
	if !r.take(conf.UserID) {
		r.c.quota.Add(1)
		return nil, nil, errQuota
	}
	conn, err := r.listen(conf)
	if err != nil {
		r.release(conf.UserID)
		return nil, nil, err
	}
	addr := *conn.LocalAddr().(*net.UDPAddr)
	addr.IP = r.public
	rc := &relayConn{PacketConn: conn, r: r, user: conf.UserID, port: uint16(addr.Port)}
	r.c.allocations.Add(1)
	r.c.allocationsTotal.Add(1)
	r.live.Add(rc.port)
	if r.bytesPerSec > 0 {
		rc.out, rc.in = limit.NewBucket(r.bytesPerSec, r.burst), limit.NewBucket(r.bytesPerSec, r.burst)
	}
	if r.maxLifetime > 0 {
		rc.timer.Store(time.AfterFunc(r.maxLifetime, func() {
			r.c.expired.Add(1)
			_ = rc.Close() // pion's read loop fails and deletes the allocation
		}))
	}
	return rc, &addr, nil
}

func (r *relays) listen(conf pturn.AllocateListenerConfig) (net.PacketConn, error) {
	if conf.RequestedPort != 0 {
		if conf.RequestedPort < int(r.min) || conf.RequestedPort > int(r.max) {
			return nil, errPort
		}
		return net.ListenPacket(conf.Network, net.JoinHostPort(r.bind, strconv.Itoa(conf.RequestedPort)))
	}
	span := int(r.max) - int(r.min) + 1
	for range 20 {
		port := int(r.min) + rand.IntN(span)
		if conn, err := net.ListenPacket(conf.Network, net.JoinHostPort(r.bind, strconv.Itoa(port))); err == nil {
			return conn, nil
		}
	}
	return nil, errNoRelayPort
}

// AllocateListener refuses TCP relays: browsers relay over UDP only (their
// connection to the TURN server may be TCP or TLS), and a TCP relay would
// open outgoing connections to peers.
func (r *relays) AllocateListener(pturn.AllocateListenerConfig) (net.Listener, net.Addr, error) {
	return nil, nil, errTCPRelay
}

// AllocateConn refuses TCP relays (RFC 6062 Connect).
func (r *relays) AllocateConn(pturn.AllocateConnConfig) (net.Conn, error) {
	return nil, errTCPRelay
}

// relayConn is one allocation's relay socket. Every packet to or from a peer
// is checked against the policy (own addresses are reachable at some ports
// only, which the IP-level permission cannot say) and the allocation's
// bandwidth in its direction; over it, packets are dropped as by a congested
// link. It closes at the lifetime cap.
type relayConn struct {
	net.PacketConn
	r       *relays
	user    string
	port    uint16
	out, in limit.Bucket               // zero Buckets when bandwidth is unlimited
	timer   atomic.Pointer[time.Timer] // the lifetime cap
	once    sync.Once
}

func (c *relayConn) WriteTo(p []byte, addr net.Addr) (int, error) {
	ua, ok := addr.(*net.UDPAddr)
	if !ok || !c.r.policy.PermitAddr(ua.AddrPort()) {
		c.r.c.refusedPackets.Add(1)
		return 0, errRefused
	}
	if c.r.bytesPerSec > 0 && !c.out.AllowN(c.r.now(), len(p)) {
		c.r.c.overBandwidth.Add(uint64(len(p)))
		return len(p), nil
	}
	n, err := c.PacketConn.WriteTo(p, addr)
	c.r.c.toPeers.Add(uint64(n))
	return n, err
}

func (c *relayConn) ReadFrom(p []byte) (int, net.Addr, error) {
	for {
		n, addr, err := c.PacketConn.ReadFrom(p)
		if err != nil {
			return n, addr, err
		}
		if ua, ok := addr.(*net.UDPAddr); !ok || !c.r.policy.PermitAddr(ua.AddrPort()) {
			c.r.c.refusedPackets.Add(1)
			continue
		}
		if c.r.bytesPerSec > 0 && !c.in.AllowN(c.r.now(), n) {
			c.r.c.overBandwidth.Add(uint64(n))
			continue
		}
		c.r.c.fromPeers.Add(uint64(n))
		return n, addr, nil
	}
}

func (c *relayConn) Close() error {
	err := net.ErrClosed
	c.once.Do(func() {
		if t := c.timer.Load(); t != nil {
			t.Stop()
		}
		c.r.release(c.user)
		c.r.live.Remove(c.port)
		c.r.c.allocations.Add(-1)
		err = c.PacketConn.Close()
	})
	return err
}
