package room

import (
	"errors"
	"time"

	"github.com/podium-sfu/podium/internal/limit"
	"github.com/podium-sfu/podium/internal/signal"
)

// Chat bounds (docs/protocol.md, "Chat and raised hands").
const (
	// ChatHistoryLen and ChatHistoryBytes bound the messages a room keeps for
	// late joiners: the newest ones, as many as fit both.
	ChatHistoryLen   = 100
	ChatHistoryBytes = 64 << 10
	// ChatRate and ChatBurst bound one participant's chat: ChatBurst messages
	// at once, ChatRate a second sustained. Chat is fanned out to the whole
	// room, so it has its own limit beside the signaling rate.
	ChatRate  = 5
	ChatBurst = 5
)

// ErrChatRate is returned for a chat message beyond the sender's chat rate.
var ErrChatRate = errors.New("too many chat messages; wait a moment")

// chatLog is a room's recent chat and each sender's chat rate. It is owned by
// the room loop and reads no clock.
type chatLog struct {
	msgs    []signal.ChatMessage // oldest first
	bytes   int                  // chatBytes of msgs
	lastSeq uint64
	rates   map[string]limit.Bucket // by participant id, while it is a member
}

// chatBytes is what a message costs the history's byte bound.
func chatBytes(m signal.ChatMessage) int { return len(m.From) + len(m.Name) + len(m.Text) }

// post stamps and keeps a message from participant from (display name name)
// at now, or refuses it with ErrChatRate. The text is already validated.
func (c *chatLog) post(now time.Time, from, name, text string) (signal.ChatMessage, error) {
	if c.rates == nil {
		c.rates = map[string]limit.Bucket{}
	}
	b, ok := c.rates[from]
	if !ok {
		b = limit.NewBucket(ChatRate, ChatBurst)
		c.rates[from] = b
	}
	if !b.Allow(now) {
		return signal.ChatMessage{}, ErrChatRate
	}
	return c.keep(signal.ChatMessage{From: from, Name: name, Text: text, Time: now.UnixMilli()}), nil
}

// keep numbers m in this room's order and keeps it in the history.
func (c *chatLog) keep(m signal.ChatMessage) signal.ChatMessage {
	c.lastSeq++
	m.Seq = c.lastSeq
	c.msgs = append(c.msgs, m)
	c.bytes += chatBytes(m)
	drop := 0
	for len(c.msgs)-drop > ChatHistoryLen || c.bytes > ChatHistoryBytes {
		c.bytes -= chatBytes(c.msgs[drop])
		drop++
	}
	if drop > 0 {
		// Copy down rather than reslice, so the backing array does not grow forever.
		c.msgs = append(c.msgs[:0], c.msgs[drop:]...)
	}
	return m
}

// chatKey tells a message apart from others whichever bridge numbered it.
type chatKey struct {
	from, text string
	time       int64
}

func keyOf(m signal.ChatMessage) chatKey { return chatKey{m.From, m.Text, m.Time} }

// seed puts earlier, another bridge's history of the room (oldest first),
// before the messages kept here that it lacks, and numbers them all anew,
// from 1 unless more numbers were given out here than there are messages:
// a client keeps what it showed numbered below a chat-history's first
// message, and later messages must still number above every number given out.
func (c *chatLog) seed(earlier []signal.ChatMessage) {
	seen := make(map[chatKey]bool, len(earlier))
	merged := make([]signal.ChatMessage, 0, len(earlier)+len(c.msgs))
	for _, m := range earlier {
		if !seen[keyOf(m)] {
			seen[keyOf(m)] = true
			merged = append(merged, m)
		}
	}
	for _, m := range c.msgs {
		if !seen[keyOf(m)] {
			merged = append(merged, m)
		}
	}
	c.msgs, c.bytes = c.msgs[:0], 0
	c.lastSeq = max(c.lastSeq, uint64(len(merged))) - uint64(len(merged))
	for _, m := range merged {
		c.keep(m)
	}
}

// history is a copy of the kept messages, oldest first (never nil).
func (c *chatLog) history() []signal.ChatMessage {
	return append([]signal.ChatMessage{}, c.msgs...)
}

// forget drops a departed participant's rate. A rejoin starts with a full
// bucket; joins-per-ip bounds how often that can happen.
func (c *chatLog) forget(id string) { delete(c.rates, id) }

// Chat posts text from m to everyone in the room, m included (its copy, with
// the server's time and id, confirms it), and returns the message as sent.
// It fails with ErrChatRate.
func (r *Room) Chat(m Member, text string) (signal.ChatMessage, error) {
	var msg signal.ChatMessage
	var err error
	r.doFor(m, func(s *state) {
		cur, ok := s.current(m)
		if !ok {
			return
		}
		if msg, err = s.chat.post(time.Now(), cur.info.ID, cur.info.Name, text); err == nil {
			s.broadcast(nil, signal.TypeChat, msg)
		}
	})
	return msg, err
}

// ChatHistory is a copy of the room's kept chat, oldest first.
func (r *Room) ChatHistory() []signal.ChatMessage {
	out := []signal.ChatMessage{}
	r.do(func(s *state) { out = s.chat.history() })
	return out
}

// SeedChat puts another bridge's chat history of the room before what was
// posted here since the room opened, and gives everyone here the whole
// history again (chat-history replaces what a client shows).
func (r *Room) SeedChat(earlier []signal.ChatMessage) {
	r.do(func(s *state) {
		s.chat.seed(earlier)
		s.broadcast(nil, signal.TypeChatHistory, signal.ChatHistory{Messages: s.chat.history()})
	})
}

// RelayedChat shows everyone here a message another bridge of the room
// posted (its sender, name, text and time), numbered in this room's order
// and kept in its history.
func (r *Room) RelayedChat(msg signal.ChatMessage) {
	r.do(func(s *state) { s.broadcast(nil, signal.TypeChat, s.chat.keep(msg)) })
}

// SetHand raises or lowers m's hand: a participant flag relayed to the others
// in participants.
func (r *Room) SetHand(m Member, raised bool) {
	r.doFor(m, func(s *state) {
		cur, ok := s.current(m)
		if !ok || cur.info.HandRaised == raised {
			return
		}
		cur.info.HandRaised = raised
		s.announce(time.Now(), cur)
	})
}

// sendChatHistory gives a joiner the kept chat; sent on every join, so that a
// reconnecting client replaces what it showed with what it missed.
func (s *state) sendChatHistory(m Member) {
	m.Send(signal.TypeChatHistory, signal.ChatHistory{Messages: s.chat.history()})
}
