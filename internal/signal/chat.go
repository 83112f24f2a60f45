package signal

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Chat and raised-hand messages (docs/protocol.md, "Chat and raised hands").
const (
	TypeChat        = "chat"         // client → server: text to post; server → client: a posted message
	TypeChatHistory = "chat-history" // server → client, right after welcome: the room's recent messages
	TypeRaiseHand   = "raise-hand"   // client → server: raise or lower one's hand
)

// Chat error codes; neither ends the session.
const (
	CodeChatTooLong     = "chat-too-long"     // more than MaxChatChars characters
	CodeChatRateLimited = "chat-rate-limited" // more chat messages than the room's chat rate allows
)

// MaxChatChars bounds the text of one chat message, in characters (code points).
const MaxChatChars = 2000

// ChatPost is what a client posts.
type ChatPost struct {
	Text string `json:"text"`
}

// ChatMessage is a posted message as the room relays and keeps it.
type ChatMessage struct {
	Seq  uint64 `json:"seq"`  // increasing within the room
	From string `json:"from"` // the sender's participant id
	Name string `json:"name"` // the sender's display name when it posted
	Text string `json:"text"` // plain text, never markup
	Time int64  `json:"time"` // server time of posting, Unix milliseconds
}

// ChatHistory is the room's most recent messages, oldest first.
type ChatHistory struct {
	Messages []ChatMessage `json:"messages"`
}

// RaiseHand raises (true) or lowers the sender's hand.
type RaiseHand struct {
	Raised bool `json:"raised"`
}

// validateChat accepts 1 to MaxChatChars characters of text that is not all
// white space, with no control characters but line feed and tab.
func validateChat(p *ChatPost) error {
	if strings.TrimSpace(p.Text) == "" {
		return Errorf(CodeBadMessage, false, "chat: empty text")
	}
	if n := utf8.RuneCountInString(p.Text); n > MaxChatChars {
		return Errorf(CodeChatTooLong, false, "chat: %d characters, at most %d", n, MaxChatChars)
	}
	for _, r := range p.Text {
		if r != '\n' && r != '\t' && unicode.IsControl(r) {
			return Errorf(CodeBadMessage, false, "chat: control character U+%04X", r)
		}
	}
	return nil
}
