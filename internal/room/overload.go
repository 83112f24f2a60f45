package room

import (
	"errors"
	"time"

	"github.com/podium-sfu/podium/internal/algo/layers"
	"github.com/podium-sfu/podium/internal/algo/overload"
)

// ErrBusy refuses a join while the server is overloaded with every room down
// to audio only (internal/algo/overload).
var ErrBusy = errors.New("the server is overloaded and takes no new participants")

// SetBusy makes the hub refuse new joins with ErrBusy (resumes excepted: they
// bring no new load), or admit them again.
func (h *Hub) SetBusy(busy bool) { h.busy.Store(busy) }

// Busy reports whether new joins are refused for overload.
func (h *Hub) Busy() bool { return h.busy.Load() }

// OverloadInfo describes the room for the overload controller; false when the
// room has ended.
func (r *Room) OverloadInfo() (overload.Room, bool) {
	var out overload.Room
	ok := r.do(func(s *state) {
		out = overload.Room{ID: r.name, Size: len(s.members), LastN: s.settings.LastN, Created: s.created}
	})
	return out, ok
}

// Shed sets the overload controller's ceiling on what the room's receivers
// get (overload.None lifts it). It is a ceiling over each receiver's own
// choice: Last N takes the lower of the two, and layers are chosen as if no
// video were shown larger than the cap allows.
func (r *Room) Shed(c overload.Cap) {
	r.do(func(s *state) {
		if c == overload.None {
			s.settings.Shed = nil
		} else {
			s.settings.Shed = &c
		}
		s.reselect(time.Now())
	})
}

// capN is a receiver's Last N n under the overload ceiling.
func (st Settings) capN(n int) int {
	if st.Shed == nil {
		return n
	}
	return effectiveN(n, st.Shed.LastN)
}

// capWant is how a receiver shows a video as far as layer choice goes: no
// larger than the overload ceiling.
func (st Settings) capWant(w layers.Want) layers.Want {
	if st.Shed == nil || st.Shed.MaxHeight <= 0 {
		return w
	}
	maxH := st.Shed.MaxHeight
	if w.Height == 0 && !w.Stage { // a thumbnail (180p) already
		return w
	}
	if w.Stage || w.Height > maxH {
		width := maxH * 16 / 9
		if w.Height > 0 && w.Width > 0 {
			width = w.Width * maxH / w.Height
		}
		return layers.Want{Width: width, Height: maxH}
	}
	return w
}
