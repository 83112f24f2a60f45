package room

import (
	"runtime/debug"
	"sync/atomic"
)

// command is one piece of work for the room loop; by is the member whose
// client caused it (nil: the server's own work). done, if not nil, is closed
// once it ran, or panicked.
type command struct {
	by   Member
	f    func()
	done chan struct{}
}

// testCommandHook, set by tests only, runs before every command.
var testCommandHook atomic.Pointer[func(by Member)]

// run runs c. A panic in it is a bug, and must not end the process (every room
// and every call on it): it is logged with the room and the stack, the member
// that caused it is closed, and the loop goes on with the next command.
func (r *Room) run(c command) {
	defer func() {
		if c.done != nil {
			defer close(c.done)
		}
		p := recover()
		if p == nil {
			return
		}
		id := ""
		if c.by != nil {
			id = c.by.ID()
		}
		r.log.Error("room command panicked", "room", r.name, "participant", id, "panic", p, "stack", string(debug.Stack()))
		if c.by != nil {
			c.by.Failed("internal error in the room")
		}
	}()
	if hook := testCommandHook.Load(); hook != nil {
		(*hook)(c.by)
	}
	c.f()
}
