package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/podium-sfu/podium/internal/signal"
	"github.com/podium-sfu/podium/internal/web"
)

// The admin API across bridges (docs/cluster.md): an action on a participant
// or a room that another bridge serves is asked of that bridge by
// request/reply ("admin" on podium.node.<id>.admin) and done there exactly as
// its own admin API does it; room settings go through the cluster's settings
// entry (clustersettings.go).

// adminAsk bounds one bridge's answer.
const adminAsk = 2 * time.Second

// startClusterAdmin starts the settings watch, answers other nodes' admin
// requests and relays chat (a cluster).
func (s *Server) startClusterAdmin() error {
	s.settings = s.node.WatchSettings(s.applySettings, s.servedRooms)
	if err := s.node.Handle("admin", s.answerAdmin); err != nil {
		return err
	}
	return s.startClusterChat()
}

// adminRequest is what one node asks another: a participant's action (ID
// set), the room's details, closing the room, or its chat history.
type adminRequest struct {
	Room    string                `json:"room"`
	ID      string                `json:"id,omitempty"`
	Act     web.ParticipantAction `json:"act,omitzero"`
	Close   bool                  `json:"close,omitempty"`
	History bool                  `json:"history,omitempty"`
}

// adminReply is the answer: Found false when the room or participant is not
// served there; Body the participant or the room as that node's admin API
// shows it.
type adminReply struct {
	Found   bool            `json:"found"`
	Body    json.RawMessage `json:"body,omitempty"`
	Removed int             `json:"removed,omitempty"`
}

// answerAdmin does another node's admin request on this node's own
// participants.
func (s *Server) answerAdmin(req []byte) ([]byte, error) {
	var q adminRequest
	if err := json.Unmarshal(req, &q); err != nil || !signal.ValidRoom(q.Room) {
		return nil, errors.New("bad admin request")
	}
	var reply adminReply
	rm, ok := s.hub.Room(q.Room)
	if !ok {
		return json.Marshal(reply)
	}
	switch {
	case q.History:
		reply.Found = true
		reply.Body, _ = json.Marshal(rm.ChatHistory())
	case q.Close:
		reply.Found = true
		reply.Removed = rm.CloseRoom("the room was closed by an administrator")
		s.log.Info("room closed at another node's request", "room", q.Room, "participants", reply.Removed)
	case q.ID != "":
		if !s.servesParticipant(q.Room, q.ID) {
			break
		}
		switch {
		case q.Act.Remove:
			reply.Found = rm.Remove(q.ID, signal.ByeRemoved, "you were removed from the room by an administrator")
		case q.Act.Mute != nil:
			reply.Found = rm.AdminMute(q.ID, q.Act.Mute.Audio, q.Act.Mute.Video)
		default:
			reply.Found = true
		}
		if reply.Found {
			s.log.Info("participant administered at another node's request", "room", q.Room, "participant", q.ID,
				"mute", q.Act.Mute, "remove", q.Act.Remove)
		}
		if st, ok := rm.Stats(time.Now()); ok && !q.Act.Remove {
			for _, p := range st.Participants {
				if p.ID == q.ID {
					reply.Body, _ = json.Marshal(p)
				}
			}
		}
	default:
		if st, ok := rm.Stats(time.Now()); ok {
			reply.Found = true
			reply.Body, _ = json.Marshal(st)
		}
	}
	return json.Marshal(reply)
}

// servesParticipant: id is a participant of roomName served here (the room's
// statistics list only those; another bridge's are its own to administer).
func (s *Server) servesParticipant(roomName, id string) bool {
	rm, ok := s.hub.Room(roomName)
	if !ok {
		return false
	}
	st, ok := rm.Stats(time.Now())
	if !ok {
		return false
	}
	for _, p := range st.Participants {
		if p.ID == id {
			return true
		}
	}
	return false
}

// bridgeAnswer is one bridge's answer to an admin request.
type bridgeAnswer struct {
	node  string
	reply adminReply
	err   error
}

// askBridges asks every other bridge of the room in the directory, at once,
// each within adminAsk; answers sorted by node.
func (s *Server) askBridges(ctx context.Context, q adminRequest) []bridgeAnswer {
	body, _ := json.Marshal(q)
	var out []bridgeAnswer
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, e := range s.node.Bridges(q.Room, time.Now()) {
		if e.Node == s.node.ID() {
			continue
		}
		wg.Add(1)
		go func(node string) {
			defer wg.Done()
			a := bridgeAnswer{node: node}
			rctx, cancel := context.WithTimeout(ctx, adminAsk)
			defer cancel()
			b, err := s.node.Request(rctx, node, "admin", body)
			if err == nil {
				err = json.Unmarshal(b, &a.reply)
			}
			switch {
			case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout):
				a.err = fmt.Errorf("bridge %s: %w (%v)", node, web.ErrBridgeTimeout, err)
			case err != nil:
				a.err = fmt.Errorf("bridge %s: %w", node, err)
			}
			mu.Lock()
			out = append(out, a)
			mu.Unlock()
		}(e.Node)
	}
	wg.Wait()
	sort.Slice(out, func(i, j int) bool { return out[i].node < out[j].node })
	return out
}

// found is the first answer that found what was asked; else the bridges'
// errors (nil when every bridge answered that it has none).
func found(answers []bridgeAnswer) (bridgeAnswer, bool, error) {
	var errs []error
	for _, a := range answers {
		if a.err != nil {
			errs = append(errs, a.err)
		} else if a.reply.Found {
			return a, true, nil
		}
	}
	return bridgeAnswer{}, false, errors.Join(errs...)
}

// clusterAdmin is web.ClusterAdmin for this server.
type clusterAdmin struct{ s *Server }

func (c clusterAdmin) Settings(_ context.Context, roomName string, patch signal.RoomSettings) error {
	return c.s.changeSettings(roomName, patch)
}

func (c clusterAdmin) Participant(ctx context.Context, roomName, id string, act web.ParticipantAction) (json.RawMessage, string, bool, error) {
	a, ok, err := found(c.s.askBridges(ctx, adminRequest{Room: roomName, ID: id, Act: act}))
	if !ok {
		return nil, "", false, err
	}
	body := a.reply.Body
	if body == nil {
		body, _ = json.Marshal(map[string]string{"id": id})
	}
	return body, a.node, true, nil
}

func (c clusterAdmin) Room(ctx context.Context, roomName string) (json.RawMessage, string, bool, error) {
	a, ok, err := found(c.s.askBridges(ctx, adminRequest{Room: roomName}))
	return a.reply.Body, a.node, ok, err
}

func (c clusterAdmin) Elsewhere() []string {
	var out []string
	for name := range c.s.node.Rooms(time.Now()) {
		if _, here := c.s.hub.Room(name); !here {
			out = append(out, name)
		}
	}
	return out
}

func (c clusterAdmin) Close(ctx context.Context, roomName string) (int, error) {
	n := 0
	var errs []error
	for _, a := range c.s.askBridges(ctx, adminRequest{Room: roomName, Close: true}) {
		if a.err != nil {
			errs = append(errs, a.err)
		}
		n += a.reply.Removed
	}
	return n, errors.Join(errs...)
}
