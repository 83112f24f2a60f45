package room

import (
	"sort"

	"github.com/podium-sfu/podium/internal/forward"
	"github.com/podium-sfu/podium/internal/signal"
)

// Room is one conference.
type Room struct {
	name  string
	cmds  chan func()
	done  chan struct{}
	refs  int // guarded by the hub's mutex
	state state
}

// state is owned by the room loop.
type state struct {
	members map[string]*member
	joins   int
}

func newRoom(name string) *Room {
	r := &Room{name: name, cmds: make(chan func(), 64), done: make(chan struct{})}
	r.state.members = map[string]*member{}
	return r
}

// Name is the room's name.
func (r *Room) Name() string { return r.name }

func (r *Room) loop() {
	defer close(r.done)
	for f := range r.cmds {
		f()
	}
}

// do runs f on the room loop and waits for it.
func (r *Room) do(f func(*state)) {
	done := make(chan struct{})
	r.cmds <- func() { f(&r.state); close(done) }
	<-done
}

// join adds m (replacing a session that held the same id) and subscribes it to every
// published track. It returns the other participants.
func (r *Room) join(m Member, info signal.Participant) []signal.Participant {
	var others []signal.Participant
	r.do(func(s *state) {
		resumed := false
		if old, ok := s.members[info.ID]; ok {
			s.removeMember(old)
			old.m.Replaced()
			resumed = true
		}
		s.joins++
		nm := &member{m: m, info: info, downs: map[*forward.UpTrack]*forward.DownTrack{}, order: s.joins}
		for _, o := range s.sorted() {
			others = append(others, o.info)
			for _, up := range o.ups {
				s.subscribe(nm, up)
			}
		}
		s.members[info.ID] = nm
		typ := signal.TypeJoined
		if resumed {
			typ = signal.TypeUpdated
		}
		s.broadcast(nm, typ, signal.ParticipantEvent{Participant: info})
	})
	return others
}

// leave removes m if it is still the session holding its id.
func (r *Room) leave(m Member) {
	r.do(func(s *state) {
		if cur, ok := s.members[m.ID()]; ok && cur.m == m {
			s.removeMember(cur)
			s.broadcast(cur, signal.TypeLeft, signal.ParticipantLeft{ID: m.ID()})
		}
	})
}

// Publish forwards up to every other member.
func (r *Room) Publish(m Member, up *forward.UpTrack) {
	r.do(func(s *state) {
		pub, ok := s.members[m.ID()]
		if !ok || pub.m != m {
			return
		}
		pub.ups = append(pub.ups, up)
		for _, o := range s.members {
			if o != pub {
				s.subscribe(o, up)
			}
		}
	})
}

// Unpublish stops forwarding up (its sender stopped it or left).
func (r *Room) Unpublish(m Member, up *forward.UpTrack) {
	r.do(func(s *state) {
		if pub, ok := s.members[m.ID()]; ok && pub.m == m {
			s.unpublish(pub, up)
		}
	})
}

// SetMute records and relays a member's microphone and camera state.
func (r *Room) SetMute(m Member, audio, video bool) {
	r.do(func(s *state) {
		cur, ok := s.members[m.ID()]
		if !ok || cur.m != m {
			return
		}
		cur.info.AudioMuted, cur.info.VideoMuted = audio, video
		s.broadcast(cur, signal.TypeUpdated, signal.ParticipantEvent{Participant: cur.info})
	})
}

// Participants lists the members in join order.
func (r *Room) Participants() []signal.Participant {
	var out []signal.Participant
	r.do(func(s *state) {
		for _, m := range s.sorted() {
			out = append(out, m.info)
		}
	})
	return out
}

func (s *state) subscribe(to *member, up *forward.UpTrack) {
	d := forward.NewDownTrack(up, to.info.ID)
	to.downs[up] = d
	to.m.AddDownTrack(d)
	up.AddDown(d)
}

func (s *state) unpublish(pub *member, up *forward.UpTrack) {
	for i, u := range pub.ups {
		if u == up {
			pub.ups = append(pub.ups[:i], pub.ups[i+1:]...)
			break
		}
	}
	for _, o := range s.members {
		if d, ok := o.downs[up]; ok {
			delete(o.downs, up)
			up.RemoveDown(d)
			o.m.RemoveDownTrack(d)
		}
	}
}

func (s *state) removeMember(m *member) {
	for len(m.ups) > 0 {
		s.unpublish(m, m.ups[0])
	}
	for up, d := range m.downs {
		up.RemoveDown(d)
	}
	delete(s.members, m.info.ID)
}

func (s *state) broadcast(from *member, typ string, body any) {
	for _, o := range s.members {
		if o != from {
			o.m.Send(typ, body)
		}
	}
}

func (s *state) sorted() []*member {
	out := make([]*member, 0, len(s.members))
	for _, m := range s.members {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].order < out[j].order })
	return out
}
