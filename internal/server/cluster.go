package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/podium-sfu/podium/internal/cascade"
	"github.com/podium-sfu/podium/internal/cluster"
	"github.com/podium-sfu/podium/internal/config"
	"github.com/podium-sfu/podium/internal/relay"
	"github.com/podium-sfu/podium/internal/room"
	"github.com/podium-sfu/podium/internal/signal"
	"github.com/podium-sfu/podium/internal/web"
)

// startCluster joins the cluster (docs/cluster.md): the embedded NATS server,
// or the external one; a single node binds no port at all.
func (s *Server) startCluster(opts Options) error {
	cfg := s.cfg
	var routeTLS *tls.Config
	if cfg.ClusterTLSCert != "" {
		var err error
		if routeTLS, err = clusterTLS(cfg); err != nil {
			return err
		}
	}
	if cfg.NATS != "" && cfg.ClusterListen != "" {
		s.log.Warn("cluster-listen and cluster-peers are ignored: nats names an external NATS, which is the cluster")
	}
	src := &clusterSource{hub: s.hub, draining: &s.draining, cpu: opts.CPU, rtts: cluster.NewClientRTTs()}
	if src.cpu == nil {
		share := processShare(usableCores()) // overload shedding's reader and cores
		src.cpu = func(now time.Time) float64 { cpu, _ := share(now); return min(1, cpu) }
	}
	s.source = src
	node, err := cluster.Start(cluster.Config{
		NodeID: opts.NodeID, Region: cfg.Region, URL: s.nodeURL, RelayPort: cfg.RelayPort,
		Listen: cfg.ClusterListen, Peers: cfg.ClusterPeers, NATSURL: cfg.NATS, Credentials: cfg.NATSCreds,
		RouteTLS: routeTLS, Heartbeat: opts.ClusterHeartbeat, TTL: opts.ClusterTTL, Log: s.log,
	}, src)
	if err != nil {
		return err
	}
	s.node = node
	src.node = node
	if err := node.Handle("participants", s.answerParticipants); err != nil {
		node.Close()
		return err
	}
	if cfg.Clustered() {
		if err := s.startClusterAdmin(); err != nil {
			node.Close()
			return err
		}
	}
	if cfg.Clustered() && cfg.RelayPort != 0 {
		if err := s.startRelay(); err != nil {
			node.Close()
			return err
		}
	}
	return nil
}

// clusterTLS is mutual TLS for the routes, from the NATS cluster tls options.
func clusterTLS(cfg config.Config) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(cfg.ClusterTLSCert, cfg.ClusterTLSKey)
	if err != nil {
		return nil, fmt.Errorf("cluster-tls-cert: %w", err)
	}
	ca, err := os.ReadFile(cfg.ClusterTLSCA)
	if err != nil {
		return nil, fmt.Errorf("cluster-tls-ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("cluster-tls-ca: no certificate in %s", cfg.ClusterTLSCA)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, ClientCAs: pool,
		ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}, nil
}

// Node is the server's cluster membership.
func (s *Server) Node() *cluster.Node { return s.node }

// place chooses the bridge for a join (session.Deps.Place): nil serves it here.
// lost is the bridge a failing-over client lost: taken for dead, since the
// registry marks it so only a TTL after its last heartbeat.
func (s *Server) place(roomName, region, bridge, lost string, resume bool) *signal.Redirect {
	self := s.node.ID()
	if s.draining.Load() { // another bridge, if there is one; else the join is refused as draining
		return s.choose(roomName, region, self)
	}
	if bridge == self || lost == self { // a redirect sent the client here; or it lost us, yet reached us
		if _, here := s.hub.Room(roomName); !here {
			time.AfterFunc(100*time.Millisecond, s.node.Touch) // see below
		}
		return nil
	}
	if s.hub.Busy() {
		// Overloaded (docs/scale.md, Overload): a resume is taken back (the
		// hub admits one of its participants); another join goes to a node
		// that takes participants, if there is one, else is refused as busy.
		if resume {
			return nil
		}
		return s.choose(roomName, region, self)
	}
	return s.choose(roomName, region, lost)
}

// choose runs bridge selection for a participant of region joining roomName,
// never choosing avoid: nil means this node.
func (s *Server) choose(roomName, region, avoid string) *signal.Redirect {
	self := s.node.ID()
	if region == "" {
		region = s.cfg.Region
	}
	now := time.Now()
	entries := s.node.Bridges(roomName, now)
	in := cluster.Selection{Region: region, Nodes: s.node.Nodes(now)}
	for i := range in.Nodes {
		if in.Nodes[i].ID == avoid {
			in.Nodes[i].Healthy = false
		}
	}
	// Measured RTTs (rtts.go): where a figure is missing, Select falls back
	// to Algorithm 3.
	in.ClientRTT, in.BridgeRTT = cluster.ClientRTTFor(in.Nodes, region), cluster.BridgeRTTs(in.Nodes)
	for _, e := range entries {
		in.Conference = append(in.Conference, e.Node)
		for _, ms := range e.RTTMS {
			in.Members = append(in.Members, cluster.Member{Bridge: e.Node, RTTMS: ms})
		}
		for range e.Participants - len(e.RTTMS) {
			in.Members = append(in.Members, cluster.Member{Bridge: e.Node}) // not measured yet
		}
	}
	if _, here := s.hub.Room(roomName); here && !containsString(in.Conference, self) {
		in.Conference = append(in.Conference, self) // not in the directory yet
	}
	if node, ok := s.placed.recent(roomName, now); ok && node != avoid && !containsString(in.Conference, node) {
		in.Conference = append(in.Conference, node) // sent there, not in the directory yet (placed.go)
	}
	choice, ok := cluster.Select(in)
	if !ok || choice.Node == self {
		if !containsString(in.Conference, self) {
			// A room new here: publish it in the directory right after the
			// join rather than at the next heartbeat, so that others who join
			// meanwhile elsewhere are sent here.
			time.AfterFunc(100*time.Millisecond, s.node.Touch)
		}
		return nil
	}
	for _, n := range in.Nodes {
		if n.ID == choice.Node && n.URL != "" {
			ws, err := bridgeWSURL(n.URL, region, n.ID)
			if err != nil {
				return nil
			}
			s.redirects.Add(1)
			s.placed.add(roomName, n.ID, now)
			return &signal.Redirect{URL: ws, Node: n.ID, Region: n.Region, Reason: string(choice.Reason)}
		}
	}
	return nil
}

// observeClientRTT takes a participant's RTT to this node for the figures by
// region the registry publishes (session.Deps.ClientRTT).
func (s *Server) observeClientRTT(region, participant string, rtt time.Duration) {
	if region == "" {
		region = s.cfg.Region
	}
	s.source.observeRTT(region, participant, rtt)
}

// fallbacks are this node's id and the other healthy, not draining nodes'
// signaling URLs for a participant of region, that region's first (then by
// id), each with ?lost= naming this node (session.Deps.Fallbacks).
func (s *Server) fallbacks(region string) (string, []string) {
	self := s.node.ID()
	if region == "" {
		region = s.cfg.Region
	}
	nodes := s.node.Nodes(time.Now())
	sort.SliceStable(nodes, func(i, j int) bool {
		a, b := nodes[i].Region == region, nodes[j].Region == region
		if a != b {
			return a
		}
		return nodes[i].ID < nodes[j].ID
	})
	var urls []string
	for _, n := range nodes {
		if n.ID == self || !n.Healthy || n.Load.Draining || n.URL == "" {
			continue
		}
		if u, err := entryWSURL(n.URL, url.Values{"region": {region}, "lost": {self}}); err == nil {
			urls = append(urls, u)
		}
	}
	return self, urls
}

// inheritEntries is the settings a room opening here takes from its entries at
// other bridges, a dead one's included (inherit): the room state
// lives in the cluster, so a failover or a split keeps Last N, the stage and
// the E2EE requirement. The entry of the bridge with the most participants
// wins. nil: no other bridge has the room.
func (s *Server) inheritEntries(roomName string) *signal.RoomSettings {
	var best *cluster.RoomEntry
	for _, e := range s.node.RoomEntries(roomName) {
		if e.Node == s.node.ID() {
			continue
		}
		if best == nil || e.Participants > best.Participants {
			best = &e
		}
	}
	if best == nil {
		return nil
	}
	lastN, e2ee := best.LastN, best.E2EERequired
	return &signal.RoomSettings{LastN: &lastN, OnStage: best.OnStage, E2EERequired: &e2ee}
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// bridgeWSURL is a node's signaling WebSocket for a redirected client.
func bridgeWSURL(base, region, node string) (string, error) {
	return entryWSURL(base, url.Values{"region": {region}, "bridge": {node}})
}

// entryWSURL is the signaling WebSocket of the node at base, with query.
func entryWSURL(base string, query url.Values) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", err
	}
	switch u.Scheme {
	case "https":
		u.Scheme = "wss"
	default:
		u.Scheme = "ws"
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/ws"
	u.RawQuery = query.Encode()
	return u.String(), nil
}

// participantsReply is the answer to a participants request.
type participantsReply struct {
	Participants []room.ParticipantStats `json:"participants"`
}

// answerParticipants answers another node: the room's participants here.
func (s *Server) answerParticipants(req []byte) ([]byte, error) {
	name := string(req)
	if !signal.ValidRoom(name) {
		return nil, errors.New("not a room name")
	}
	reply := participantsReply{Participants: []room.ParticipantStats{}}
	if rm, ok := s.hub.Room(name); ok {
		if st, ok := rm.Stats(time.Now()); ok {
			reply.Participants = st.Participants
		}
	}
	return json.Marshal(reply)
}

// remoteParticipants asks every other bridge of the room for its participants
// (web.Admin.Remote), at once, each answer within 2 s.
func (s *Server) remoteParticipants(ctx context.Context, roomName string) []web.Bridge {
	now := time.Now()
	regions := map[string]string{}
	for _, n := range s.node.Nodes(now) {
		regions[n.ID] = n.Region
	}
	var out []web.Bridge
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, e := range s.node.Bridges(roomName, now) {
		if e.Node == s.node.ID() {
			continue
		}
		wg.Add(1)
		go func(node string) {
			defer wg.Done()
			b := web.Bridge{Node: node, Region: regions[node]}
			rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			body, err := s.node.Request(rctx, node, "participants", []byte(roomName))
			var reply struct {
				Participants []json.RawMessage `json:"participants"`
			}
			if err == nil {
				err = json.Unmarshal(body, &reply)
			}
			if err != nil {
				b.Error = err.Error()
			} else {
				b.Participants = reply.Participants
			}
			mu.Lock()
			out = append(out, b)
			mu.Unlock()
		}(e.Node)
	}
	wg.Wait()
	return out
}

// hostMemory is how long a node's host stays admitted as an origin after it
// was last seen healthy: a page served by a node that died since fails over
// to the others from that origin (docs/cluster.md, Failover).
const hostMemory = time.Hour

// clusterHosts are the host:port of the other nodes healthy now or within
// hostMemory (web.Handler.ClusterHosts).
func (s *Server) clusterHosts() []string {
	now := time.Now()
	s.hostsMu.Lock()
	defer s.hostsMu.Unlock()
	if s.hostsSeen == nil {
		s.hostsSeen = map[string]time.Time{}
	}
	for _, n := range s.node.Nodes(now) {
		if n.ID == s.node.ID() || !n.Healthy {
			continue
		}
		if u, err := url.Parse(n.URL); err == nil && u.Host != "" {
			s.hostsSeen[u.Host] = now
		}
	}
	var out []string
	for h, at := range s.hostsSeen {
		if now.Sub(at) > hostMemory {
			delete(s.hostsSeen, h)
			continue
		}
		out = append(out, h)
	}
	sort.Strings(out)
	return out
}

// clusterSource is what the node publishes: load, the rooms served here and
// the measured paths.
type clusterSource struct {
	hub      *room.Hub
	draining *atomic.Bool
	node     *cluster.Node
	cpu      func(now time.Time) float64
	relay    atomic.Pointer[relayPaths] // set once the relay runs

	rttMu sync.Mutex          // guards rtts: sessions observe, the heartbeat reads
	rtts  *cluster.ClientRTTs // the participants' RTTs to this node by region

	// Owned by the node's heartbeat goroutine.
	rooms     []cluster.RoomEntry
	lastBytes uint64
	lastAt    time.Time
}

func (c *clusterSource) Load() cluster.Load {
	now := time.Now()
	stats, totals := c.hub.Collect(now)
	bytes := totals.Kinds[room.KindAudio].BytesOut + totals.Kinds[room.KindVideo].BytesOut
	var bps int64
	if !c.lastAt.IsZero() && now.After(c.lastAt) && bytes >= c.lastBytes {
		bps = int64(float64(bytes-c.lastBytes) * 8 / now.Sub(c.lastAt).Seconds())
	}
	c.lastBytes, c.lastAt = bytes, now
	l := cluster.Load{CPU: c.cpu(now), BitrateBps: bps, Rooms: len(stats), Draining: c.draining.Load(), Busy: c.hub.Busy()}
	c.rooms = c.rooms[:0]
	for _, st := range stats {
		l.Participants += len(st.Participants)
		e := cluster.RoomEntry{Room: st.Name, Participants: len(st.Participants), LastN: st.LastN,
			OnStage: st.OnStage, E2EERequired: st.E2EERequired, Speaker: st.Speaker, Speakers: st.Speakers, Since: st.Created}
		if len(st.Participants) > 0 {
			e.RTTMS = map[string]float64{}
			for _, p := range st.Participants {
				if p.RTTPublishMS > 0 {
					e.RTTMS[p.ID] = p.RTTPublishMS
				} else if p.RTTReceiveMS > 0 { // an audience member
					e.RTTMS[p.ID] = p.RTTReceiveMS
				}
			}
		}
		c.rooms = append(c.rooms, e)
	}
	return l
}

func (c *clusterSource) Rooms() []cluster.RoomEntry { return c.rooms }

// relayPaths are what the registry publishes of the relay.
type relayPaths struct {
	cascade *cascade.Cascade
	probes  *relay.Prober
}

// Paths are the relay's address and probe RTTs, and the participants' RTTs
// by region (docs/cluster.md, Where the RTTs come from).
func (c *clusterSource) Paths() cluster.Paths {
	now := time.Now()
	c.rttMu.Lock()
	p := cluster.Paths{ClientRTT: c.rtts.Figures(now)}
	c.rttMu.Unlock()
	if r := c.relay.Load(); r != nil {
		p.RelayAddr = r.cascade.Addr().String()
		p.RelayRTTMS = map[string]float64{}
		for node, d := range r.probes.RTTs(now) {
			p.RelayRTTMS[node] = float64(d) / 1e6
		}
	}
	return p
}

// observeRTT takes a participant's RTT to this node (session.Deps.ClientRTT).
func (c *clusterSource) observeRTT(region, participant string, rtt time.Duration) {
	c.rttMu.Lock()
	c.rtts.Observe(time.Now(), region, participant, rtt)
	c.rttMu.Unlock()
}

// clusterCollector exposes the cluster gauges on /metrics.
type clusterCollector struct{ s *Server }

var (
	clusterNodesDesc = prometheus.NewDesc("podium_cluster_nodes",
		"Healthy nodes in the cluster registry, this one included (1 for a single node).", nil, nil)
	clusterRoomsDesc = prometheus.NewDesc("podium_cluster_rooms",
		"Rooms in the cluster's room directory, whichever bridges serve them.", nil, nil)
	clusterServedDesc = prometheus.NewDesc("podium_cluster_rooms_served",
		"Rooms this node serves as a bridge.", nil, nil)
	clusterRedirectsDesc = prometheus.NewDesc("podium_cluster_redirects_total",
		"Joins this node sent to another bridge.", nil, nil)
)

func (c clusterCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- clusterNodesDesc
	ch <- clusterRoomsDesc
	ch <- clusterServedDesc
	ch <- clusterRedirectsDesc
}

func (c clusterCollector) Collect(ch chan<- prometheus.Metric) {
	now := time.Now()
	nodes, rooms := 1, 0
	if c.s.node != nil {
		nodes, rooms = c.s.node.HealthyNodes(now), len(c.s.node.Rooms(now))
	}
	ch <- prometheus.MustNewConstMetric(clusterNodesDesc, prometheus.GaugeValue, float64(nodes))
	ch <- prometheus.MustNewConstMetric(clusterRoomsDesc, prometheus.GaugeValue, float64(rooms))
	ch <- prometheus.MustNewConstMetric(clusterServedDesc, prometheus.GaugeValue, float64(len(c.s.hub.Rooms())))
	ch <- prometheus.MustNewConstMetric(clusterRedirectsDesc, prometheus.CounterValue, float64(c.s.redirects.Load()))
}
