package session

import (
	"errors"

	"github.com/podium-sfu/podium/internal/room"
	"github.com/podium-sfu/podium/internal/signal"
)

// handleChat posts a validated chat message to the room; beyond the room's chat
// rate the client gets a non-fatal chat-rate-limited and the message is dropped.
func (s *Session) handleChat(p *signal.ChatPost) error {
	msg, err := s.room.Chat(s, p.Text)
	if errors.Is(err, room.ErrChatRate) {
		return signal.Errorf(signal.CodeChatRateLimited, false, "chat: at most %d messages a second; message dropped", room.ChatRate)
	}
	if err == nil && msg.From != "" && s.deps.Chat != nil {
		s.deps.Chat(s.room.Name(), msg) // the room's other bridges, in this session's order
	}
	return err
}
