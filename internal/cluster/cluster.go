// Package cluster is the control plane shared by Podium nodes (docs/cluster.md):
// every node embeds a NATS server (or connects to an external NATS), and the
// nodes keep, in JetStream key-value buckets, a registry of nodes (region, load,
// health by heartbeat and TTL) and a room directory (which bridges serve which
// room, with the room's settings and speaker). Nodes ask each other questions
// with NATS request/reply. Nothing here is home-made consensus: replication,
// expiry and membership are NATS's.
//
// Bridge selection (select.go) is a pure function of what the registry and the
// directory hold.
package cluster

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strconv"
	"sync"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Config is what a node needs to join the cluster.
type Config struct {
	// NodeID names this node in the registry; empty: a random id.
	NodeID string
	// Region is the node's region (default "default").
	Region string
	// URL is where clients reach this node's web client and /ws (http(s)://host:port/).
	URL string
	// RelayPort is the UDP port reserved for bridge-to-bridge media (0: none yet).
	RelayPort int
	// Listen is the embedded NATS server's cluster (route) listener, host:port;
	// empty: a single node, no listener at all.
	Listen string
	// Peers are route URLs of other nodes (nats://host:port).
	Peers []string
	// NATSURL, when set, connects to an external NATS (with JetStream) instead of
	// embedding a server; Listen and Peers are then unused.
	NATSURL string
	// Credentials is a NATS credentials file for NATSURL (nats.UserCredentials).
	Credentials string
	// RouteTLS, when set, secures the embedded server's routes (mutual TLS with
	// the NATS server's own cluster TLS options).
	RouteTLS *tls.Config
	// Heartbeat is how often the node refreshes its registry entry (default 2 s);
	// TTL how long an entry lives without refresh (default 3 heartbeats).
	Heartbeat, TTL time.Duration
	// Replicas of the buckets (0: min(cluster size, 3)).
	Replicas int
	Log      *slog.Logger
}

// Source is what the node publishes of its server: its load, the rooms it
// serves and what it measured of the paths to it. Each is called once per
// heartbeat (and after Touch), from one goroutine, Load first.
type Source interface {
	Load() Load
	Rooms() []RoomEntry
	Paths() Paths
}

type noSource struct{}

func (noSource) Load() Load         { return Load{} }
func (noSource) Rooms() []RoomEntry { return nil }
func (noSource) Paths() Paths       { return Paths{} }

// Bucket names.
const (
	NodesBucket = "podium-nodes"
	RoomsBucket = "podium-rooms"
)

// roomRefresh is how often an unchanged room entry is written again; entries
// expire after three of these without refresh.
const roomRefresh = 20 * time.Second

// Node is this process's membership of the cluster.
type Node struct {
	cfg   Config
	log   *slog.Logger
	src   Source
	touch chan struct{}      // asks for an early heartbeat
	ns    *natsserver.Server // nil with an external NATS
	nc    *nats.Conn
	dir   string // JetStream store directory we made (removed on Close)

	ready  chan struct{} // closed once the buckets are bound
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	nodes   map[string]seenNode
	rooms   map[string]map[string]RoomEntry // room → node → entry
	kvNodes jetstream.KeyValue
	kvRooms jetstream.KeyValue
	mine    map[string]published // rooms this node published
	subs    []*nats.Subscription
}

type seenNode struct {
	info NodeInfo
	seen time.Time // local receipt time of the latest heartbeat
	rev  uint64    // its revision in the bucket
}

type published struct {
	entry RoomEntry
	at    time.Time
}

// Start starts the embedded NATS server (or connects to the external one) and,
// in the background, binds the buckets, heartbeats and watches the registry.
// It returns as soon as the connection is up: a single node is ready at once,
// a cluster once JetStream has a leader (Ready).
func Start(cfg Config, src Source) (*Node, error) {
	if cfg.Region == "" {
		cfg.Region = "default"
	}
	if cfg.NodeID == "" {
		b := make([]byte, 6)
		_, _ = rand.Read(b)
		cfg.NodeID = "n" + hex.EncodeToString(b)
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = 2 * time.Second
	}
	if cfg.TTL <= 0 {
		cfg.TTL = 3 * cfg.Heartbeat
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if src == nil {
		src = noSource{}
	}
	n := &Node{cfg: cfg, log: cfg.Log.With("node", cfg.NodeID), src: src, ready: make(chan struct{}), touch: make(chan struct{}, 1),
		nodes: map[string]seenNode{}, rooms: map[string]map[string]RoomEntry{}, mine: map[string]published{}}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	if err := n.connect(); err != nil {
		n.Close()
		return nil, err
	}
	sub, err := n.nc.Subscribe(heartbeatSubject+"*", func(m *nats.Msg) { n.onHeartbeat(m.Data) })
	if err != nil {
		n.Close()
		return nil, fmt.Errorf("cluster: heartbeats: %w", err)
	}
	n.subs = append(n.subs, sub)
	n.wg.Add(1)
	go func() { defer n.wg.Done(); n.run() }()
	return n, nil
}

// connect starts the embedded server or dials the external NATS.
func (n *Node) connect() error {
	name := nats.Name("podium " + n.cfg.NodeID)
	if n.cfg.NATSURL != "" {
		opts := []nats.Option{name, nats.MaxReconnects(-1), nats.ReconnectWait(500 * time.Millisecond)}
		if n.cfg.Credentials != "" {
			opts = append(opts, nats.UserCredentials(n.cfg.Credentials))
		}
		nc, err := nats.Connect(n.cfg.NATSURL, opts...)
		if err != nil {
			return fmt.Errorf("nats %s: %w", redact(n.cfg.NATSURL), err)
		}
		n.nc = nc
		return nil
	}
	dir, err := os.MkdirTemp("", "podium-nats-")
	if err != nil {
		return fmt.Errorf("nats store: %w", err)
	}
	n.dir = dir
	opts := &natsserver.Options{
		ServerName: n.cfg.NodeID,
		DontListen: true, // clients are in-process only: no client port
		NoSigs:     true,
		NoLog:      true,
		JetStream:  true,
		StoreDir:   dir,
		// The buckets are small and in memory; keep JetStream from reserving
		// a share of the machine's memory and disk.
		JetStreamMaxMemory: 64 << 20,
		JetStreamMaxStore:  64 << 20,
	}
	if n.cfg.Listen != "" {
		host, port, err := splitHostPort(n.cfg.Listen)
		if err != nil {
			return fmt.Errorf("cluster-listen: %w", err)
		}
		if port == 0 {
			port = natsserver.RANDOM_PORT
		}
		opts.Cluster = natsserver.ClusterOpts{Name: "podium", Host: host, Port: port, TLSConfig: n.cfg.RouteTLS, NoAdvertise: true}
		// nats-server starts routing only once its client listener is up:
		// clustered, it gets one on an ephemeral loopback port (our own
		// connection stays in-process; nothing is advertised).
		opts.DontListen = false
		opts.Host, opts.Port = "127.0.0.1", natsserver.RANDOM_PORT
		if n.cfg.RouteTLS != nil {
			opts.Cluster.TLSTimeout = 2
		}
		for _, p := range n.cfg.Peers {
			u, err := url.Parse(p)
			if err != nil {
				return fmt.Errorf("cluster-peers: %q: %w", p, err)
			}
			opts.Routes = append(opts.Routes, u)
		}
	}
	ns, err := natsserver.NewServer(opts)
	if err != nil {
		return fmt.Errorf("embedded nats: %w", err)
	}
	ns.Start()
	n.ns = ns
	if !ns.ReadyForConnections(30 * time.Second) { // a loaded box under -race took over 10 s
		return errors.New("embedded nats: not ready within 30s (cluster-listen in use?)")
	}
	nc, err := nats.Connect("", name, nats.InProcessServer(ns), nats.MaxReconnects(-1))
	if err != nil {
		return fmt.Errorf("embedded nats: %w", err)
	}
	n.nc = nc
	return nil
}

func splitHostPort(hp string) (string, int, error) {
	host, port, err := net.SplitHostPort(hp)
	if err != nil {
		return "", 0, err
	}
	p, err := strconv.Atoi(port)
	if err != nil || p < 0 || p > 65535 {
		return "", 0, fmt.Errorf("bad port %q", port)
	}
	return host, p, nil
}

// redact hides a URL's password.
func redact(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "?"
	}
	return u.Redacted()
}

// replicas is how many copies the buckets keep.
func (n *Node) replicas() int {
	if n.cfg.Replicas > 0 {
		return n.cfg.Replicas
	}
	if n.cfg.NATSURL != "" || n.cfg.Listen == "" {
		return 1
	}
	size := 1
	for _, p := range n.cfg.Peers {
		if u, err := url.Parse(p); err == nil && u.Host != n.cfg.Listen {
			size++
		}
	}
	return min(size, 3)
}

// ID is this node's id; Region its region.
func (n *Node) ID() string     { return n.cfg.NodeID }
func (n *Node) Region() string { return n.cfg.Region }

// Ready is closed once the registry and directory are available.
func (n *Node) Ready() <-chan struct{} { return n.ready }

// Conn is the node's NATS connection (request/reply between bridges).
func (n *Node) Conn() *nats.Conn { return n.nc }

// Close leaves the cluster: the registry entry and room entries are deleted
// (a node that dies instead expires after TTL), then NATS stops.
func (n *Node) Close() {
	if n == nil {
		return
	}
	t0 := time.Now()
	n.cancel()
	n.wg.Wait()
	n.log.Debug("cluster: close: loops stopped", "took", time.Since(t0))
	n.mu.Lock()
	kvNodes, kvRooms, mine, subs := n.kvNodes, n.kvRooms, n.mine, n.subs
	n.mine, n.subs = map[string]published{}, nil
	n.mu.Unlock()
	for _, s := range subs {
		_ = s.Unsubscribe()
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if n.nc == nil || !n.nc.IsConnected() {
		kvNodes, kvRooms = nil, nil
	}
	if kvNodes != nil {
		_ = kvNodes.Delete(ctx, n.cfg.NodeID)
	}
	if kvRooms != nil {
		for room := range mine {
			_ = kvRooms.Delete(ctx, roomKey(room, n.cfg.NodeID))
		}
	}
	n.log.Debug("cluster: close: entries deleted", "took", time.Since(t0))
	if n.nc != nil {
		n.nc.Close()
	}
	n.log.Debug("cluster: close: connection closed", "took", time.Since(t0))
	if n.ns != nil {
		n.ns.Shutdown()
		n.ns.WaitForShutdown()
	}
	if n.dir != "" {
		_ = os.RemoveAll(n.dir)
	}
}

// run binds the buckets (retrying until JetStream answers), then heartbeats.
func (n *Node) run() {
	js, err := jetstream.New(n.nc)
	if err != nil {
		n.log.Error("cluster: jetstream", "err", err)
		return
	}
	for {
		err := n.bind(js)
		if err == nil {
			break
		}
		n.log.Debug("cluster: waiting for jetstream", "err", err)
		n.publishHeartbeat() // the others see us meanwhile
		select {
		case <-n.ctx.Done():
			return
		case <-time.After(min(250*time.Millisecond, n.cfg.Heartbeat)):
		}
	}
	close(n.ready)
	n.log.Info("cluster: joined", "region", n.cfg.Region, "url", n.cfg.URL, "replicas", n.replicas())
	tick := time.NewTicker(n.cfg.Heartbeat)
	defer tick.Stop()
	for {
		n.heartbeat()
		select {
		case <-n.ctx.Done():
			return
		case <-tick.C:
		case <-n.touch:
		}
	}
}

// bind creates (or finds) both buckets and starts watching them.
func (n *Node) bind(js jetstream.JetStream) error {
	ctx, cancel := context.WithTimeout(n.ctx, 5*time.Second)
	defer cancel()
	kvNodes, err := n.bucket(ctx, js, jetstream.KeyValueConfig{
		Bucket: NodesBucket, Description: "podium node registry (docs/cluster.md)",
		History: 1, TTL: n.cfg.TTL, LimitMarkerTTL: n.cfg.TTL,
		Storage: jetstream.MemoryStorage, Replicas: n.replicas(),
	})
	if err != nil {
		return err
	}
	kvRooms, err := n.bucket(ctx, js, jetstream.KeyValueConfig{
		Bucket: RoomsBucket, Description: "podium room directory (docs/cluster.md)",
		History: 1, TTL: 3 * roomRefresh, LimitMarkerTTL: 3 * roomRefresh,
		Storage: jetstream.MemoryStorage, Replicas: n.replicas(),
	})
	if err != nil {
		return err
	}
	// Put ourselves first so that a watcher's initial values include us.
	if err := n.putSelf(ctx, kvNodes); err != nil {
		return err
	}
	wn, err := kvNodes.WatchAll(n.ctx)
	if err != nil {
		return fmt.Errorf("watch %s: %w", NodesBucket, err)
	}
	wr, err := kvRooms.WatchAll(n.ctx)
	if err != nil {
		_ = wn.Stop()
		return fmt.Errorf("watch %s: %w", RoomsBucket, err)
	}
	n.mu.Lock()
	n.kvNodes, n.kvRooms = kvNodes, kvRooms
	n.mu.Unlock()
	n.wg.Add(2)
	go func() { defer n.wg.Done(); n.watch(wn, n.applyNode) }()
	go func() { defer n.wg.Done(); n.watch(wr, n.applyRoom) }()
	return nil
}

// bucket binds a bucket, creating it if it does not exist: the first node to
// create it sets its configuration (the others do not change it).
func (n *Node) bucket(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	kv, err := js.KeyValue(ctx, cfg.Bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = js.CreateKeyValue(ctx, cfg)
		if errors.Is(err, jetstream.ErrBucketExists) {
			kv, err = js.KeyValue(ctx, cfg.Bucket)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("bucket %s: %w", cfg.Bucket, err)
	}
	return kv, nil
}

// RouteAddr is the embedded server's cluster listener (nil without one).
func (n *Node) RouteAddr() net.Addr {
	if n.ns == nil {
		return nil
	}
	if a := n.ns.ClusterAddr(); a != nil {
		return a
	}
	return nil
}

// Crash stops the node as a crash would, for tests: the embedded NATS server
// goes away and nothing is deleted from the registry or the directory (its
// entries expire after TTL). Close still releases the rest.
func (n *Node) Crash() {
	n.cancel()
	if n.ns != nil {
		n.ns.Shutdown()
	}
}
