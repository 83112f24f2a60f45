package cluster

import (
	"context"
	"encoding/json"
	"sort"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Load is what a node reports of its work.
type Load struct {
	// CPU is the process's share of the machine over the last heartbeat (0..1).
	CPU float64 `json:"cpu"`
	// BitrateBps is what the node forwarded over the last heartbeat, bits/s.
	BitrateBps int64 `json:"bitrateBps"`
	// Participants and Rooms served here now.
	Participants int `json:"participants"`
	Rooms        int `json:"rooms"`
	// Draining: the node takes no new participants.
	Draining bool `json:"draining,omitempty"`
	// Busy: the node's overload protection refuses new participants
	// (server-busy) until its load falls; only a resume is taken.
	Busy bool `json:"busy,omitempty"`
}

// NodeInfo is a node's registry entry.
type NodeInfo struct {
	ID        string `json:"id"`
	Region    string `json:"region"`
	URL       string `json:"url"`
	RelayPort int    `json:"relayPort,omitempty"`
	Load      Load   `json:"load"`
	// Started is when the node started (Unix ms), to tell restarts apart.
	Started int64 `json:"started"`
	// Healthy is set by Nodes: a heartbeat arrived within the TTL.
	Healthy bool `json:"healthy"`
	Paths
}

// Paths are what a node measured of the network around it, for bridge
// selection (rtts.go): where the other bridges reach its relay, its relay's
// round trips to theirs, and its participants' round trips to it by region.
type Paths struct {
	RelayAddr  string               `json:"relayAddr,omitempty"`
	RelayRTTMS map[string]float64   `json:"relayRttMs,omitempty"` // by node id
	ClientRTT  map[string]RegionRTT `json:"clientRtt,omitempty"`  // by participant region
}

func (n *Node) self() NodeInfo {
	return NodeInfo{ID: n.cfg.NodeID, Region: n.cfg.Region, URL: n.cfg.URL, RelayPort: n.cfg.RelayPort}
}

// putSelf writes this node's entry with its current load to the bucket and
// publishes it as a heartbeat.
func (n *Node) putSelf(ctx context.Context, kv jetstream.KeyValue) error {
	b := n.publishHeartbeat()
	_, err := kv.Put(ctx, n.cfg.NodeID, b)
	return err
}

// publishHeartbeat sends this node's entry as a heartbeat and returns it. The
// heartbeat is plain NATS (routed, no Raft): health does not wait for the
// bucket's stream, which stalls for a leader election (4–9 s) when its leader
// dies, nor for JetStream to form at start.
func (n *Node) publishHeartbeat() []byte {
	info := n.self()
	info.Load = n.src.Load()
	info.Paths = n.src.Paths()
	info.Started = started.UnixMilli()
	b, _ := json.Marshal(info)
	_ = n.nc.Publish(heartbeatSubject+n.cfg.NodeID, b)
	return b
}

// heartbeatSubject + node id carries a node's heartbeats.
const heartbeatSubject = "podium.heartbeat."

// onHeartbeat records a node's heartbeat.
func (n *Node) onHeartbeat(data []byte) {
	var info NodeInfo
	if json.Unmarshal(data, &info) != nil || info.ID == "" {
		return
	}
	n.mu.Lock()
	prev := n.nodes[info.ID]
	n.nodes[info.ID] = seenNode{info: info, seen: time.Now(), rev: prev.rev}
	n.mu.Unlock()
}

var started = time.Now()

// heartbeat refreshes this node's entry and its rooms' entries.
func (n *Node) heartbeat() {
	n.mu.Lock()
	kv := n.kvNodes
	n.mu.Unlock()
	ctx, cancel := context.WithTimeout(n.ctx, n.cfg.Heartbeat)
	defer cancel()
	if err := n.putSelf(ctx, kv); err != nil && n.ctx.Err() == nil {
		n.log.Warn("cluster: heartbeat", "err", err)
	}
	n.refreshRooms(ctx, n.src.Rooms(), time.Now())
}

// Touch asks for the registry and directory entries to be written now rather
// than at the next heartbeat (a room opened or closed here).
func (n *Node) Touch() {
	select {
	case n.touch <- struct{}{}:
	default:
	}
}

// watch applies every change w reports to the local view, under mu, until
// the node stops. No Stop: it asks the server to delete the consumer, which
// can wait seconds on a cluster that lost quorum; cancelling the context ends it.
func (n *Node) watch(w jetstream.KeyWatcher, apply func(jetstream.KeyValueEntry)) {
	for {
		select {
		case <-n.ctx.Done():
			return
		case e, ok := <-w.Updates():
			if !ok {
				return
			}
			if e == nil { // initial values done
				continue
			}
			n.mu.Lock()
			apply(e)
			n.mu.Unlock()
		}
	}
}

// applyNode keeps the local view of the registry; the caller holds mu.
func (n *Node) applyNode(e jetstream.KeyValueEntry) {
	if e.Operation() != jetstream.KeyValuePut {
		delete(n.nodes, e.Key())
		return
	}
	// A heartbeat is a new revision; the same revision again is a
	// redelivery (the watcher's consumer was recreated, say after the
	// stream's leader died), which says nothing of the node.
	var info NodeInfo
	prev, had := n.nodes[e.Key()]
	if json.Unmarshal(e.Value(), &info) == nil && info.ID == e.Key() && (!had || e.Revision() > prev.rev) {
		seen := time.Now()
		if had && prev.seen.After(seen) {
			seen = prev.seen
		}
		n.nodes[info.ID] = seenNode{info: info, seen: seen, rev: e.Revision()}
	}
}

// Nodes is the registry as this node sees it at now, sorted by id: every node
// whose heartbeat arrived within the TTL is Healthy. Before the registry is
// bound, it holds this node alone.
func (n *Node) Nodes(now time.Time) []NodeInfo {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]NodeInfo, 0, len(n.nodes)+1)
	if _, ok := n.nodes[n.cfg.NodeID]; !ok {
		self := n.self()
		self.Healthy = true
		out = append(out, self)
	}
	for _, s := range n.nodes {
		info := s.info
		info.Healthy = now.Sub(s.seen) <= n.cfg.TTL || info.ID == n.cfg.NodeID
		out = append(out, info)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// HealthyNodes counts the healthy nodes at now.
func (n *Node) HealthyNodes(now time.Time) int {
	c := 0
	for _, info := range n.Nodes(now) {
		if info.Healthy {
			c++
		}
	}
	return c
}
