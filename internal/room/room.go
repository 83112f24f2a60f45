package room

import (
	"log/slog"
	"slices"
	"sort"
	"time"

	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/algo/lastn"
	"github.com/podium-sfu/podium/internal/algo/layers"
	"github.com/podium-sfu/podium/internal/algo/speaker"
	"github.com/podium-sfu/podium/internal/forward"
	"github.com/podium-sfu/podium/internal/signal"
)

// Room is one conference.
type Room struct {
	name  string
	log   *slog.Logger
	cmds  chan command
	quit  chan struct{} // closed by the hub when the last session left
	done  chan struct{} // closed when the loop ended
	refs  int           // guarded by the hub's mutex
	state state

	// opener is the address key that opened the room; guarded by the hub's mutex.
	opener string
}

// state is owned by the room loop.
type state struct {
	members    map[string]*member
	joins      int
	settings   Settings
	onStage    []string
	detector   *speaker.Detector
	order      lastn.Order // speaker order L, on-stage on top
	dominant   string
	levels     []forward.AudioLevel // scratch for draining level rings
	nextLayers time.Time            // when maintainLayers is due
	pauseCheck time.Time            // when a new sender's pause grace ends (zero: none)
	keyframes  []keyframeAt         // preemptive keyframe requests not yet due
	created    time.Time
	retired    Totals // counters of tracks that ended here
	chat       chatLog
	p2p        p2pState // hybrid P2P mode (p2p.go)
	// remoteDemand is, by other bridge, what its receivers need of the
	// sources published here (remote.go).
	remoteDemand map[string]map[string][]bool
	// remoteWants is, by source served elsewhere, the encodings receivers
	// here need kept on at its sender (remote.go).
	remoteWants map[string][]bool
	audio       audioState  // whose microphones receivers with audio slots get (audioslots.go)
	roster      rosterBatch // participant changes not yet sent (listing.go)
	listed      int         // members whose changes are pushed to everyone
	reselectAt  time.Time   // when a join's or leave's reselect is due (soon.go); zero: none
	speakers    orderSync   // whether another bridge decides the speaker order (speakerorder.go)
	settingsRev uint64      // the cluster settings revision applied last (settingsync.go)
	layerRound  layerRound  // scratch of maintainLayers and allocate (layerround.go)
}

func newRoom(name string, settings Settings) *Room {
	r := &Room{name: name, log: slog.Default(), cmds: make(chan command, 64), quit: make(chan struct{}), done: make(chan struct{})}
	r.state = state{
		created:  time.Now(),
		members:  map[string]*member{},
		settings: settings,
		onStage:  []string{},
		detector: speaker.New(speaker.DefaultConfig()),
		// Zero would read as "nothing due" in nextTick.
		nextLayers: time.Now().Add(layersInterval),
	}
	return r
}

// Name is the room's name.
func (r *Room) Name() string { return r.name }

// loop runs commands, and the speaker detector when it is due, until the hub
// closes the room.
func (r *Room) loop() {
	defer close(r.done)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		select {
		case <-r.quit:
			return
		case c := <-r.cmds:
			r.run(c)
		case <-timer.C:
			r.run(command{f: r.state.tick})
		}
		timer.Stop()
		if next := r.state.nextTick(); !next.IsZero() {
			timer.Reset(max(time.Until(next), time.Millisecond))
		}
	}
}

// do runs f on the room loop and waits for it. It reports false, without running
// f, when the room has ended (a reader racing with the last participant leaving).
func (r *Room) do(f func(*state)) bool { return r.doFor(nil, f) }

// doFor is do for a command that m's client caused: if it panics, m is closed.
func (r *Room) doFor(m Member, f func(*state)) bool {
	done := make(chan struct{})
	select {
	case r.cmds <- command{by: m, f: func() { f(&r.state) }, done: done}:
	case <-r.done:
		return false
	}
	select {
	case <-done:
		return true
	case <-r.done:
		select { // it may have run just before the loop ended
		case <-done:
			return true
		default:
			return false
		}
	}
}

// current returns m's record if m is still the session holding its id.
func (s *state) current(m Member) (*member, bool) {
	cur, ok := s.members[m.ID()]
	return cur, ok && cur.m == m
}

// join adds m (replacing a session that held the same id) and subscribes it to every
// published track, unless that would exceed maxParticipants (0: unlimited). It
// returns the other participants the room lists (listing.go).
func (r *Room) join(m Member, info signal.Participant, opts JoinOptions, maxParticipants int) ([]signal.Participant, error) {
	var others []signal.Participant
	var err error
	r.doFor(m, func(s *state) {
		now := time.Now()
		if s.settings.E2EERequired && !info.E2EE {
			err = ErrE2EERequired
			return
		}
		old, resumed := s.members[info.ID]
		if !resumed && maxParticipants > 0 && len(s.members) >= maxParticipants {
			err = ErrRoomFull
			return
		}
		if resumed {
			s.announceLeave(now, old) // announceJoin below makes it an update
			s.removeMember(old)
			old.m.Replaced()
			s.p2pRestart(now)
		}
		s.joins++
		nm := &member{m: m, info: info, downs: map[*forward.UpTrack]*forward.DownTrack{}, order: s.joins, wantN: -1,
			constraints: map[string]layers.Want{}, bw: newBandwidthState(), identity: opts.Identity, perms: opts.Permissions, joined: now,
			self: signal.Mute{Audio: info.AudioMuted, Video: info.VideoMuted}}
		s.addSlots(nm, opts)
		for _, o := range s.sorted() {
			if o.listed {
				others = append(others, o.info)
			}
			if nm.perms.Subscribe {
				for _, up := range o.publishedUps() {
					s.subscribe(nm, up)
				}
			}
		}
		s.members[info.ID] = nm
		if nm.perms.Publish { // an audience member is never a speaker nor in anyone's Last N
			s.order.Add(lastnID(info.ID))
			s.detector.Add(now, speaker.ID(info.ID))
		}
		s.announceJoin(now, nm)
		m.Send(signal.TypeRoom, s.roomState())
		m.Send(signal.TypeSpeaker, signal.Speaker{ID: s.dominant})
		s.sendChatHistory(m)
		s.reselectSoon(now)
	})
	return others, err
}

// leave removes m if it is still the session holding its id.
func (r *Room) leave(m Member) {
	r.doFor(m, func(s *state) {
		if cur, ok := s.current(m); ok {
			s.removeMember(cur)
			s.forget(m.ID())
			s.chat.forget(m.ID())
			s.p2p.forget(m.ID())
			s.announceLeave(time.Now(), cur)
			s.reselectSoon(time.Now())
		}
	})
}

// Publish forwards up to every other member.
func (r *Room) Publish(m Member, up *forward.UpTrack) {
	r.doFor(m, func(s *state) {
		pub, ok := s.current(m)
		if !ok {
			return
		}
		if up.Source() != pub.info.ID { // its screen share
			s.publishShare(pub, up, time.Now())
			s.reselect(time.Now())
			return
		}
		pub.ups = append(pub.ups, up)
		if !pub.listed {
			s.announce(time.Now(), pub) // a publisher is listed
		}
		if up.Kind() == webrtc.RTPCodecTypeVideo && pub.videoSince.IsZero() {
			pub.videoSince = time.Now()
		}
		up.SetMuted(pub.adminMuted(up.Kind()))
		for _, o := range s.members {
			if o != pub && o.perms.Subscribe {
				s.subscribe(o, up)
			}
		}
		s.reselect(time.Now())
	})
}

// Unpublish stops forwarding up (its sender stopped it or left).
func (r *Room) Unpublish(m Member, up *forward.UpTrack) {
	r.doFor(m, func(s *state) {
		if pub, ok := s.current(m); ok {
			if pub.sharing(up) {
				s.unpublishShare(pub, up)
			} else {
				s.unpublish(pub, up)
			}
			s.reselect(time.Now())
		}
	})
}

// SetMute records and relays a member's microphone and camera state.
func (r *Room) SetMute(m Member, audio, video bool) {
	r.doFor(m, func(s *state) {
		cur, ok := s.current(m)
		if !ok {
			return
		}
		// An administrator's mute stays in force whatever the client says.
		cur.self = signal.Mute{Audio: audio, Video: video}
		cur.info.AudioMuted, cur.info.VideoMuted = audio || cur.mutedAudio, video || cur.mutedVideo
		s.announce(time.Now(), cur)
	})
}

// SetLastN sets how many videos m wants (-1: as many as the room allows).
func (r *Room) SetLastN(m Member, n int) {
	r.doFor(m, func(s *state) {
		if cur, ok := s.current(m); ok {
			cur.wantN = max(n, -1)
			s.reselect(time.Now())
		}
	})
}

// UpdateSettings changes the room's Last N, on-stage set and E2EE requirement
// (nil fields: unchanged). It returns how many participants in the room did not
// announce e2ee: requiring E2EE refuses later joins but removes nobody.
func (r *Room) UpdateSettings(c signal.RoomSettings) (unencrypted int) {
	r.do(func(s *state) { unencrypted = s.updateSettings(c) })
	return unencrypted
}

// updateSettings is UpdateSettings on the room loop.
func (s *state) updateSettings(c signal.RoomSettings) (unencrypted int) {
	lastN, onStage := c.LastN, c.OnStage
	if lastN != nil {
		s.settings.LastN = max(*lastN, -1)
	}
	if c.E2EERequired != nil {
		s.settings.E2EERequired = *c.E2EERequired
	}
	if c.P2P != nil {
		s.settings.NoP2P = !*c.P2P
	}
	if c.AudioSlots != nil {
		s.settings.AudioSlots = *c.AudioSlots
	}
	unencrypted = s.unencrypted()
	if onStage != nil {
		s.onStage = slices.Clone(onStage)
		ids := make([]lastn.ID, len(onStage))
		for i, id := range onStage {
			ids[i] = lastnID(id)
		}
		s.order.SetOnStage(ids)
	}
	s.broadcast(nil, signal.TypeRoom, s.roomState())
	s.reselect(time.Now())
	return unencrypted
}

// Settings returns the room's current policy.
func (r *Room) Settings() Settings {
	var out Settings
	r.do(func(s *state) { out = s.settings })
	return out
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

func (s *state) roomState() signal.RoomState {
	return signal.RoomState{LastN: s.settings.LastN, OnStage: slices.Clone(s.onStage), E2EERequired: s.settings.E2EERequired,
		P2POff: s.settings.NoP2P}
}

// unencrypted counts the members that did not announce e2ee.
func (s *state) unencrypted() int {
	n := 0
	for _, m := range s.members {
		if !m.info.E2EE {
			n++
		}
	}
	return n
}

// subscribe sends up to a member: a new track, or for another simulcast encoding of
// a video it already receives, one more input of the same DownTrack.
func (s *state) subscribe(to *member, up *forward.UpTrack) {
	if s.slotted(to, up) {
		return // it hears up through its audio slots when up is selected
	}
	if up.Kind() == webrtc.RTPCodecTypeVideo {
		if d, ok := to.videoDowns()[up.Source()]; ok {
			d.Attach(up)
			to.downs[up] = d
			up.AddDown(d)
			return
		}
	}
	d := forward.NewDownTrack(up, to.info.ID)
	if to.info.E2EE {
		d.SetPlainAudio()
	}
	if label, ok := s.testSwappedLabel(to, up); ok {
		d.Relabel(label) // test only: a deliberately broken SFU
	}
	// Video starts switched off; reselect switches on what the receiver's Last N picks.
	d.SetSelected(false)
	to.downs[up] = d
	to.m.AddDownTrack(d)
	up.AddDown(d)
}

func (s *state) unpublish(pub *member, up *forward.UpTrack) {
	pub.ups = slices.DeleteFunc(pub.ups, func(u *forward.UpTrack) bool { return u == up })
	for _, o := range s.members {
		if d, ok := o.downs[up]; ok {
			delete(o.downs, up)
			up.RemoveDown(d)
			if up.Kind() == webrtc.RTPCodecTypeAudio || d.Detach(up) == 0 {
				o.m.RemoveDownTrack(d)
				s.retired.addDown(d)
			}
		}
	}
	s.retired.addUp(up)
}

func (s *state) removeMember(m *member) {
	s.endShare(m)
	s.dropSlots(m)
	for len(m.ups) > 0 {
		s.unpublish(m, m.ups[0])
	}
	retired := map[*forward.DownTrack]bool{}
	for up, d := range m.downs {
		up.RemoveDown(d)
		if !retired[d] { // a simulcast source's encodings share one DownTrack
			retired[d] = true
			s.retired.addDown(d)
		}
	}
	s.retired.Bandwidth.addReceiver(m)
	delete(s.members, m.info.ID)
	s.order.Remove(lastnID(m.info.ID))
	s.detector.Remove(time.Now(), speaker.ID(m.info.ID))
	if s.dominant == m.info.ID {
		s.dominant = ""
	}
}

// broadcast sends to every member but from (nil: everyone).
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

func lastnID(id string) lastn.ID { return lastn.ID(id) }
