package room

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/podium-sfu/podium/internal/signal"
)

var chatT0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// The history keeps the newest ChatHistoryLen messages, ids increasing, with
// the server's time.
func TestChatHistoryKeepsTheNewest(t *testing.T) {
	var c chatLog
	for i := range 250 {
		// One sender a second apart never meets the rate.
		now := chatT0.Add(time.Duration(i) * time.Second)
		m, err := c.post(now, "p1", "Ann", fmt.Sprint("message ", i))
		if err != nil {
			t.Fatalf("post %d: %v", i, err)
		}
		if m.Seq != uint64(i+1) || m.Time != now.UnixMilli() || m.From != "p1" || m.Name != "Ann" {
			t.Fatalf("post %d stamped %+v", i, m)
		}
	}
	h := c.history()
	if len(h) != ChatHistoryLen {
		t.Fatalf("history has %d messages, want %d", len(h), ChatHistoryLen)
	}
	if h[0].Text != "message 150" || h[len(h)-1].Text != "message 249" {
		t.Errorf("history runs from %q to %q, want messages 150 to 249", h[0].Text, h[len(h)-1].Text)
	}
	if cap(c.msgs) > 2*ChatHistoryLen {
		t.Errorf("history's backing array grew to %d", cap(c.msgs))
	}
}

// Long messages are bounded by bytes before they reach the count.
func TestChatHistoryByteBound(t *testing.T) {
	var c chatLog
	long := strings.Repeat("€", signal.MaxChatChars) // 3 bytes each: 6000 bytes
	for i := range 40 {
		if _, err := c.post(chatT0.Add(time.Duration(i)*time.Second), "p1", "Ann", long); err != nil {
			t.Fatal(err)
		}
	}
	h := c.history()
	total := 0
	for _, m := range h {
		total += len(m.From) + len(m.Name) + len(m.Text)
	}
	per := len("p1") + len("Ann") + len(long)
	if total > ChatHistoryBytes || total != c.bytes {
		t.Errorf("history holds %d bytes (counted %d), bound %d", total, c.bytes, ChatHistoryBytes)
	}
	if want := ChatHistoryBytes / per; len(h) != want || h[len(h)-1].Seq != 40 {
		t.Errorf("history has %d messages ending with seq %d, want the newest %d ending with 40", len(h), h[len(h)-1].Seq, want)
	}
}

// A sender may post ChatBurst messages at once, then ChatRate a second; other
// senders are not affected, and a refused message is not kept.
func TestChatRate(t *testing.T) {
	var c chatLog
	for i := range ChatBurst {
		if _, err := c.post(chatT0, "p1", "Ann", fmt.Sprint(i)); err != nil {
			t.Fatalf("message %d of the burst: %v", i, err)
		}
	}
	if _, err := c.post(chatT0, "p1", "Ann", "one too many"); !errors.Is(err, ErrChatRate) {
		t.Fatalf("message beyond the burst: %v, want ErrChatRate", err)
	}
	if _, err := c.post(chatT0, "p2", "Bob", "other sender"); err != nil {
		t.Fatalf("another sender: %v", err)
	}
	if _, err := c.post(chatT0.Add(time.Second/ChatRate-time.Millisecond), "p1", "Ann", "early"); !errors.Is(err, ErrChatRate) {
		t.Fatalf("before a token refilled: %v, want ErrChatRate", err)
	}
	if _, err := c.post(chatT0.Add(time.Second/ChatRate), "p1", "Ann", "refilled"); err != nil {
		t.Fatalf("after 1/%d s: %v", ChatRate, err)
	}
	for _, m := range c.history() {
		if m.Text == "one too many" || m.Text == "early" {
			t.Errorf("refused message %q kept", m.Text)
		}
	}
	if len(c.history()) != ChatBurst+2 {
		t.Errorf("history has %d messages, want %d", len(c.history()), ChatBurst+2)
	}
	c.forget("p1")
	if len(c.rates) != 1 {
		t.Errorf("rates after forget: %v", c.rates)
	}
}

// chats lists the chat messages (of type typ) a fake member received.
func (f *fakeMember) chats(t *testing.T, typ string) []string {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, m := range f.msgs {
		body, ok := strings.CutPrefix(m, typ+" ")
		if !ok {
			continue
		}
		switch typ {
		case signal.TypeChat:
			var c signal.ChatMessage
			if err := json.Unmarshal([]byte(body), &c); err != nil {
				t.Fatal(err)
			}
			out = append(out, c.From+": "+c.Text)
		case signal.TypeChatHistory:
			var h signal.ChatHistory
			if err := json.Unmarshal([]byte(body), &h); err != nil {
				t.Fatal(err)
			}
			for _, c := range h.Messages {
				out = append(out, c.From+": "+c.Text)
			}
			out = append(out, "--") // end of one history message
		}
	}
	return out
}

// Chat goes to everyone in the sender's room (the sender too) and nobody
// else; a late joiner gets the history right after joining, an early one an
// empty history.
func TestChatIsRoomScopedWithHistory(t *testing.T) {
	h := NewHub(DefaultSettings())
	a, b, c := newFake("pa"), newFake("pb"), newFake("pc")
	ra, _, err := h.Join("one", a, signal.Participant{ID: "pa", Name: "Ann"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.Join("one", b, signal.Participant{ID: "pb", Name: "Bob"}); err != nil {
		t.Fatal(err)
	}
	rc, _, err := h.Join("two", c, signal.Participant{ID: "pc", Name: "Cid"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ra.Chat(a, "hello one"); err != nil {
		t.Fatal(err)
	}
	if _, err := rc.Chat(c, "hello two"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		m    *fakeMember
		want string
	}{{a, "pa: hello one"}, {b, "pa: hello one"}, {c, "pc: hello two"}} {
		if got := tc.m.chats(t, signal.TypeChat); len(got) != 1 || got[0] != tc.want {
			t.Errorf("%s received chat %q, want only %q", tc.m.id, got, tc.want)
		}
		if got := tc.m.chats(t, signal.TypeChatHistory); len(got) != 1 {
			t.Errorf("%s's history at join: %q, want one empty history", tc.m.id, got)
		}
	}
	d := newFake("pd")
	if _, _, err := h.Join("one", d, signal.Participant{ID: "pd", Name: "Dee"}); err != nil {
		t.Fatal(err)
	}
	if got := d.chats(t, signal.TypeChatHistory); strings.Join(got, "|") != "pa: hello one|--" {
		t.Errorf("late joiner's history %q, want Ann's message only", got)
	}
	for _, m := range []*fakeMember{a, b, d} {
		h.Leave(ra, m)
	}
	h.Leave(rc, c)
}

// A raised hand is relayed to the others, listed for late joiners, and lowered.
func TestRaiseHand(t *testing.T) {
	h := NewHub(DefaultSettings())
	a, b := newFake("pa"), newFake("pb")
	r, _, err := h.Join("one", a, signal.Participant{ID: "pa", Name: "Ann"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.Join("one", b, signal.Participant{ID: "pb", Name: "Bob"}); err != nil {
		t.Fatal(err)
	}
	r.settle()
	before := len(b.diffs())
	r.SetHand(a, true)
	r.settle()
	r.SetHand(a, true) // no change: not relayed again
	r.settle()
	if got, _ := b.entry("pa"); !strings.Contains(got, `"handRaised":true`) || len(b.diffs()) != before+1 {
		t.Errorf("Bob got %d participants messages, last entry of Ann %s; want one with handRaised", len(b.diffs())-before, got)
	}
	c := newFake("pc")
	_, others, err := h.Join("one", c, signal.Participant{ID: "pc", Name: "Cid"})
	if err != nil {
		t.Fatal(err)
	}
	if len(others) != 2 || !others[0].HandRaised || others[1].HandRaised {
		t.Errorf("late joiner's list %+v, want Ann's hand raised and Bob's not", others)
	}
	r.SetHand(a, false)
	if got, _ := c.last(signal.TypeUpdated); strings.Contains(got, "handRaised") {
		t.Errorf("after lowering, Cid's last update %s still has the hand raised", got)
	}
	for _, m := range []*fakeMember{a, b, c} {
		h.Leave(r, m)
	}
}

// TestRelayedChat: a message another bridge posted reaches everyone here
// with its sender, name and time, numbered after this room's own messages,
// and a late joiner gets it in the history.
func TestRelayedChat(t *testing.T) {
	h := NewHubWith(DefaultSettings(), Limits{})
	defer h.Close()
	a := newFake("a")
	r, _, err := h.JoinWith("r", a, signal.Participant{ID: "a", Name: "Ann"}, subscribeOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Leave(r, a)
	if _, err := r.Chat(a, "mine"); err != nil {
		t.Fatal(err)
	}
	r.RelayedChat(signal.ChatMessage{Seq: 41, From: "far", Name: "Bob", Text: "from afar", Time: 1234})
	msg, _ := a.last(signal.TypeChat)
	var got signal.ChatMessage
	if err := json.Unmarshal([]byte(msg), &got); err != nil {
		t.Fatal(err)
	}
	if want := (signal.ChatMessage{Seq: 2, From: "far", Name: "Bob", Text: "from afar", Time: 1234}); got != want {
		t.Fatalf("relayed chat %+v, want %+v", got, want)
	}
	late := newFake("late")
	if _, _, err := h.JoinWith("r", late, signal.Participant{ID: "late"}, subscribeOnly); err != nil {
		t.Fatal(err)
	}
	defer h.Leave(r, late)
	hist, _ := late.last(signal.TypeChatHistory)
	if !strings.Contains(hist, `"text":"mine"`) || !strings.Contains(hist, `"text":"from afar"`) {
		t.Fatalf("history %s", hist)
	}
}

// TestChatSeed: another bridge's history goes before what was posted here
// since the room opened, once each (a message both have, relayed here, is
// not doubled), numbered anew from 1 (the web client keeps what it showed
// below a chat-history's first number), within the bounds, and later
// messages number above every number given out.
func TestChatSeed(t *testing.T) {
	var c chatLog
	here, err := c.post(chatT0, "a", "Ann", "posted here")
	if err != nil {
		t.Fatal(err)
	}
	relayed := c.keep(signal.ChatMessage{From: "b", Name: "Bob", Text: "relayed", Time: 2})
	earlier := []signal.ChatMessage{
		{Seq: 40, From: "b", Name: "Bob", Text: "before", Time: 1},
		{Seq: 41, From: "b", Name: "Bob", Text: "relayed", Time: 2},
	}
	c.seed(earlier)
	var got []string
	for _, m := range c.history() {
		got = append(got, fmt.Sprint(m.Seq, " ", m.Text))
	}
	if want := []string{"1 before", "2 relayed", "3 posted here"}; strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("seeded history %q, want %q (here %d, relayed %d)", got, want, here.Seq, relayed.Seq)
	}
	many := make([]signal.ChatMessage, ChatHistoryLen+10)
	for i := range many {
		many[i] = signal.ChatMessage{From: "b", Text: fmt.Sprint(i), Time: int64(i)}
	}
	c.seed(many)
	if h := c.history(); len(h) != ChatHistoryLen || h[len(h)-1].Text != "posted here" {
		t.Fatalf("seeded beyond the bound: %d messages, last %q", len(h), h[len(h)-1].Text)
	}
	// More numbers given out here than messages: numbering ends at the last.
	c = chatLog{lastSeq: 500}
	c.keep(signal.ChatMessage{From: "a", Text: "late", Time: 9})
	c.seed(earlier[:1])
	if h := c.history(); len(h) != 2 || h[0].Seq != 500 || h[1].Seq != 501 {
		t.Fatalf("seeded after 501 numbers: %+v", h)
	}
	if next := c.keep(signal.ChatMessage{From: "a", Text: "next", Time: 10}); next.Seq != 502 {
		t.Fatalf("the next message is numbered %d, want 502", next.Seq)
	}
}
