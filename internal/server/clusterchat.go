package server

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/podium-sfu/podium/internal/signal"
)

// Chat across bridges (docs/cluster.md): a message posted on one bridge is
// published once, by that bridge, on podium.chat.<room> (a room's dots
// written "="); every other bridge serving the room shows it to its
// participants and keeps it in its history. NATS keeps one publisher's
// messages on a subject in order, and a session posts one at a time, so each
// sender's messages arrive in order.

const chatSubject = "podium.chat."

// relayedChat is a chat message on the wire between bridges.
type relayedChat struct {
	Node    string             `json:"node"`
	Room    string             `json:"room"`
	Message signal.ChatMessage `json:"message"`
}

// startClusterChat subscribes to every room's chat from the other bridges
// (until the node's connection closes).
func (s *Server) startClusterChat() error {
	_, err := s.node.Conn().Subscribe(chatSubject+"*", func(m *nats.Msg) {
		var c relayedChat
		if json.Unmarshal(m.Data, &c) != nil || c.Node == s.node.ID() || !signal.ValidRoom(c.Room) || c.Message.From == "" {
			return
		}
		if rm, ok := s.hub.Room(c.Room); ok {
			rm.RelayedChat(c.Message)
		}
	})
	return err
}

// seedChat gives a room that just opened here the chat history of another
// bridge serving it (the first by id that answers), so that its joiners see
// what was said before the room came here: a split, a failover. It runs
// beside the join that opened the room, counted as part of its session.
func (s *Server) seedChat(roomName string) {
	ctx, cancel := context.WithTimeout(s.sessionCtx, adminAsk)
	defer cancel()
	for _, a := range s.askBridges(ctx, adminRequest{Room: roomName, History: true}) {
		var msgs []signal.ChatMessage
		if a.err != nil || !a.reply.Found || json.Unmarshal(a.reply.Body, &msgs) != nil {
			continue
		}
		if rm, ok := s.hub.Room(roomName); ok && len(msgs) > 0 {
			rm.SeedChat(msgs)
		}
		return
	}
}

// publishChat tells the room's other bridges of a message posted here
// (session.Deps.Chat).
func (s *Server) publishChat(roomName string, msg signal.ChatMessage) {
	b, err := json.Marshal(relayedChat{Node: s.node.ID(), Room: roomName, Message: msg})
	if err == nil {
		_ = s.node.Conn().Publish(chatSubject+strings.ReplaceAll(roomName, ".", "="), b)
	}
}
