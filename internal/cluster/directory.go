package cluster

import (
	"context"
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// RoomEntry is one bridge's entry for one room in the directory: the room's
// settings and speaker as that bridge has them, and how many of the room's
// participants it serves.
type RoomEntry struct {
	Room         string   `json:"room"`
	Node         string   `json:"node"`
	Participants int      `json:"participants"`
	LastN        int      `json:"lastN"`
	OnStage      []string `json:"onStage,omitempty"`
	E2EERequired bool     `json:"e2eeRequired,omitempty"`
	// Speaker is the dominant speaker; Speakers the speaker order, most recent first.
	Speaker  string   `json:"speaker,omitempty"`
	Speakers []string `json:"speakers,omitempty"`
	// Since is when the room opened on this bridge: the longest-serving
	// bridge writes the room's speaker order (docs/cluster.md, Speaker).
	Since time.Time `json:"since,omitzero"`
	// Pinned are the sources some participant here pins.
	Pinned []string `json:"pinned,omitempty"`
	// RTTMS are the participants' round-trip times to this bridge (ms), when measured.
	RTTMS map[string]float64 `json:"rttMs,omitempty"`
}

// roomKey is the directory key of a room on a node, node.room: room names are
// [A-Za-z0-9_.-]{1,64}, node ids [A-Za-z0-9_-]; "." splits a key's tokens and
// no token may be empty, so the room's dots are written as "=" (which no room
// name has).
func roomKey(room, node string) string { return node + "." + strings.ReplaceAll(room, ".", "=") }

func splitRoomKey(key string) (node, room string, ok bool) {
	node, room, ok = strings.Cut(key, ".")
	return node, strings.ReplaceAll(room, "=", "."), ok
}

// refreshRooms writes the entries that changed or are due for refresh and
// deletes those of rooms no longer served here.
func (n *Node) refreshRooms(ctx context.Context, entries []RoomEntry, now time.Time) {
	n.mu.Lock()
	kv := n.kvRooms
	old := n.mine
	n.mu.Unlock()
	if kv == nil {
		return
	}
	mine := make(map[string]published, len(entries))
	for _, e := range entries {
		e.Node = n.cfg.NodeID
		prev, had := old[e.Room]
		if had && reflect.DeepEqual(prev.entry, e) && now.Sub(prev.at) < roomRefresh {
			mine[e.Room] = prev
			continue
		}
		b, _ := json.Marshal(e)
		if _, err := kv.Put(ctx, roomKey(e.Room, e.Node), b); err != nil {
			n.log.Debug("cluster: room entry", "room", e.Room, "err", err)
			if had {
				mine[e.Room] = prev
			}
			continue
		}
		mine[e.Room] = published{entry: e, at: now}
	}
	for room := range old {
		if _, still := mine[room]; !still {
			if err := kv.Delete(ctx, roomKey(room, n.cfg.NodeID)); err != nil {
				n.log.Debug("cluster: room entry delete", "room", room, "err", err)
				mine[room] = old[room] // try again next time
			}
		}
	}
	n.mu.Lock()
	n.mine = mine
	n.mu.Unlock()
}

// applyRoom keeps the local view of the directory; the caller holds mu.
func (n *Node) applyRoom(e jetstream.KeyValueEntry) {
	node, room, ok := splitRoomKey(e.Key())
	if !ok {
		return
	}
	if e.Operation() != jetstream.KeyValuePut {
		delete(n.rooms[room], node)
		if len(n.rooms[room]) == 0 {
			delete(n.rooms, room)
		}
		return
	}
	var entry RoomEntry
	if json.Unmarshal(e.Value(), &entry) == nil && entry.Room == room && entry.Node == node {
		if n.rooms[room] == nil {
			n.rooms[room] = map[string]RoomEntry{}
		}
		n.rooms[room][node] = entry
	}
}

// Bridges are the directory's entries for room whose node is healthy at now,
// sorted by node id.
func (n *Node) Bridges(room string, now time.Time) []RoomEntry {
	healthy := map[string]bool{}
	for _, info := range n.Nodes(now) {
		healthy[info.ID] = info.Healthy
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []RoomEntry
	for node, e := range n.rooms[room] {
		if healthy[node] {
			out = append(out, e)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Node < out[j].Node })
	return out
}

// RoomEntries are every bridge's entry for room still in the directory, a
// dead bridge's included until they expire (a failover takes the room's
// settings from them), sorted by node.
func (n *Node) RoomEntries(room string) []RoomEntry {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []RoomEntry
	for _, e := range n.rooms[room] {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Node < out[j].Node })
	return out
}

// Rooms lists every room in the directory with its healthy bridges.
func (n *Node) Rooms(now time.Time) map[string][]RoomEntry {
	n.mu.Lock()
	names := make([]string, 0, len(n.rooms))
	for room := range n.rooms {
		names = append(names, room)
	}
	n.mu.Unlock()
	out := map[string][]RoomEntry{}
	for _, room := range names {
		if b := n.Bridges(room, now); len(b) > 0 {
			out[room] = b
		}
	}
	return out
}
