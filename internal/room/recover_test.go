package room

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/podium-sfu/podium/internal/signal"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A panic in a room command a client caused closes that client only: its
// room and the other rooms go on, and the log names the room and the stack.
func TestPanicInARoomCommandClosesOnlyItsCause(t *testing.T) {
	var logs syncBuffer
	hub := NewHub(DefaultSettings())
	hub.SetLogger(slog.New(slog.NewTextHandler(&logs, nil)))
	a, b, c := newFake("a"), newFake("b"), newFake("c")
	r1, _, err := hub.Join("r1", a, signal.Participant{ID: "a"})
	if err != nil {
		t.Fatal(err)
	}
	hub.Join("r1", b, signal.Participant{ID: "b"})
	r2, _, _ := hub.Join("r2", c, signal.Participant{ID: "c"})
	defer func() {
		hub.Leave(r1, a)
		hub.Leave(r1, b)
		hub.Leave(r2, c)
		hub.Close()
	}()
	hook := func(by Member) {
		if by == Member(a) {
			panic("injected")
		}
	}
	testCommandHook.Store(&hook)
	defer testCommandHook.Store(nil)

	r1.SetMute(a, true, false) // panics on r1's loop
	if got, _ := a.last(signal.TypeError); !strings.Contains(got, `"code":"internal"`) || !strings.Contains(got, `"fatal":true`) {
		t.Errorf("a was told %q, want a fatal internal error", got)
	}
	r1.SetMute(b, true, false)
	r1.settle()
	if got, _ := a.entry("b"); !strings.Contains(got, `"audioMuted":true`) {
		t.Errorf("r1 did not go on after the panic: a heard %q of b's mute", got)
	}
	if got := len(r2.Participants()); got != 1 {
		t.Errorf("r2 lists %d participants, want 1", got)
	}
	if b.count(signal.TypeError) != 0 || c.count(signal.TypeError) != 0 {
		t.Error("a participant that caused nothing was told of an error")
	}
	for _, want := range []string{"room command panicked", "room=r1", "participant=a", "injected", "stack="} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}
}
