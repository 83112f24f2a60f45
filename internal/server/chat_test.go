package server

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/podium-sfu/podium/internal/room"
	"github.com/podium-sfu/podium/internal/signal"
)

func (rc *rawConn) chat(text string) {
	rc.t.Helper()
	frame, err := signal.Encode(signal.TypeChat, signal.ChatPost{Text: text})
	if err != nil {
		rc.t.Fatal(err)
	}
	rc.send(frame)
}

func (rc *rawConn) expectChat(text string) signal.ChatMessage {
	rc.t.Helper()
	m := rc.waitFor("chat "+text, func(m serverMsg) bool { return m.Type == signal.TypeChat })
	var c signal.ChatMessage
	if err := json.Unmarshal(m.raw, &c); err != nil {
		rc.t.Fatal(err)
	}
	if c.Text != text {
		rc.t.Fatalf("chat %q, want %q", c.Text, text)
	}
	return c
}

func (rc *rawConn) history() []signal.ChatMessage {
	rc.t.Helper()
	m := rc.waitFor("chat-history", func(m serverMsg) bool { return m.Type == signal.TypeChatHistory })
	var h signal.ChatHistory
	if err := json.Unmarshal(m.raw, &h); err != nil {
		rc.t.Fatal(err)
	}
	return h.Messages
}

// Chat over real signaling connections: a message reaches everyone in the
// room, sender included, stamped with the sender and the server's time, and
// nobody in another room; a late joiner gets it in chat-history right after
// welcome; a text over 2000 characters and a flood get their own non-fatal
// errors and the session goes on.
func TestChatOverSignaling(t *testing.T) {
	srv := startServer(t, Options{})
	a, b, other := dialRaw(t, srv), dialRaw(t, srv), dialRaw(t, srv)
	a.join("chat", "Ann")
	if h := a.history(); len(h) != 0 {
		t.Fatalf("first joiner's history %+v, want empty", h)
	}
	b.join("chat", "Bob")
	b.history()
	other.join("elsewhere", "Oz")
	other.history()

	before := time.Now().UnixMilli()
	text := `<script>alert(1)</script> & <img src=x onerror="alert(2)">`
	a.chat(text)
	for _, rc := range []*rawConn{a, b} {
		c := rc.expectChat(text)
		if c.From != a.id || c.Name != "Ann" || c.Time < before || c.Time > time.Now().UnixMilli() || c.Seq != 1 {
			t.Errorf("chat at %s = %+v, want from %s (Ann), seq 1, time within the test", rc.id, c, a.id)
		}
	}

	late := dialRaw(t, srv)
	late.join("chat", "Dee")
	if h := late.history(); len(h) != 1 || h[0].Text != text || h[0].From != a.id {
		t.Errorf("late joiner's history %+v, want Ann's message", h)
	}

	a.chat(strings.Repeat("x", signal.MaxChatChars+1))
	a.expectError(signal.CodeChatTooLong, false)

	// A flood: ChatBurst pass at once, then about ChatRate a second.
	start := time.Now()
	const flood = 20
	for i := range flood {
		b.chat(fmt.Sprint("flood ", i))
	}
	passed, refused := 0, 0
	for passed+refused < flood {
		m := b.waitFor("flood replies", func(m serverMsg) bool {
			return m.Type == signal.TypeChat || m.Type == signal.TypeError
		})
		if m.Type == signal.TypeError {
			if m.Code != signal.CodeChatRateLimited || m.Fatal {
				t.Fatalf("flood: error %s", m.raw)
			}
			refused++
		} else {
			passed++
		}
	}
	if most := room.ChatBurst + int(time.Since(start).Seconds()*room.ChatRate) + 1; passed < room.ChatBurst || passed > most {
		t.Errorf("%d of %d flood messages passed in %v, want %d to %d", passed, flood, time.Since(start), room.ChatBurst, most)
	}
	b.expectPong(1) // the session goes on
	a.expectPong(2)

	// Nothing of it reached the other room.
	other.expectPong(3)
	for len(other.msgs) > 0 {
		if m := <-other.msgs; m.Type == signal.TypeChat {
			t.Errorf("another room's participant received %s", m.raw)
		}
	}
}
