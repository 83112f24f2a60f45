package room

import (
	"errors"
	"fmt"
	"testing"

	"github.com/podium-sfu/podium/internal/signal"
)

// TestRoomsPerAddress: one address opens at most RoomsPerAddress live rooms;
// joining others' rooms does not count, and a room that ends frees its slot.
func TestRoomsPerAddress(t *testing.T) {
	h := NewHubWith(DefaultSettings(), Limits{RoomsPerAddress: 2})
	var leave []func()
	defer func() {
		for _, f := range leave {
			f()
		}
		h.Close()
	}()
	from := func(addr string) JoinOptions { o := subscribeOnly; o.Address = addr; return o }
	join := func(room, addr string) error {
		m := newFake(fmt.Sprint("p", len(leave)))
		r, _, err := h.JoinWith(room, m, signal.Participant{ID: m.id}, from(addr))
		if err == nil {
			leave = append(leave, func() { h.Leave(r, m) })
		}
		return err
	}
	for _, room := range []string{"a1", "a2"} {
		if err := join(room, "192.0.2.1"); err != nil {
			t.Fatal(err)
		}
	}
	if err := join("a3", "192.0.2.1"); !errors.Is(err, ErrTooManyRoomsFromAddress) {
		t.Fatalf("third room from one address: %v, want ErrTooManyRoomsFromAddress", err)
	}
	if err := join("a1", "192.0.2.1"); err != nil { // a live room is open to its opener
		t.Errorf("joining a room it opened: %v", err)
	}
	if err := join("b1", "192.0.2.2"); err != nil {
		t.Errorf("another address: %v", err)
	}
	if err := join("b1", "192.0.2.1"); err != nil { // another's room does not count
		t.Errorf("joining another address's room: %v", err)
	}
	leave[1]() // a2 ends
	leave[1] = func() {}
	if err := join("a3", "192.0.2.1"); err != nil {
		t.Errorf("after one of its rooms ended: %v", err)
	}
	for _, f := range leave {
		f()
	}
	leave = nil
	if len(h.opened) != 0 {
		t.Errorf("opened after every room ended: %v", h.opened)
	}
}
