package session

import (
	"context"
	"errors"
	"time"

	"github.com/podium-sfu/podium/internal/limit"
	"github.com/podium-sfu/podium/internal/room"
	"github.com/podium-sfu/podium/internal/signal"
)

var errLeft = errors.New("participant left")

// run is the session loop: the join handshake, then messages and queued work until
// the session's context ends.
func (s *Session) run(in <-chan signal.Incoming) {
	if !s.awaitJoin(in) {
		return
	}
	s.idle.timeout = s.deps.MediaTimeout
	for {
		var timeout <-chan time.Time
		if s.nego.timer != nil {
			timeout = s.nego.timer.C
		}
		idle := s.idle.arm(time.Now())
		select {
		case <-s.ctx.Done():
			if errors.Is(context.Cause(s.ctx), ErrShutdown) {
				s.Send(signal.TypeBye, signal.Bye{Code: signal.ByeShutdown, Reason: "server shutting down"})
			}
			return
		case msg := <-in:
			s.idle.touch(time.Now())
			if err := s.handle(msg); err != nil {
				pe := signal.AsProtocolError(err)
				s.sendError(pe)
				if pe.Fatal {
					s.cancel(pe)
				}
			}
		case <-s.work.notify:
			for _, f := range s.work.drain() {
				f()
			}
		case <-timeout:
			pe := signal.Errorf(signal.CodeNegotiationTimeout, true, "subscribe offer not answered within %v", s.deps.NegotiationTimeout)
			s.sendError(pe)
			s.cancel(pe)
		case now := <-idle:
			s.idleCheck(now)
		}
		s.nego.flush(s)
	}
}

func (s *Session) awaitJoin(in <-chan signal.Incoming) bool {
	timer := time.NewTimer(s.deps.JoinTimeout)
	defer timer.Stop()
	select {
	case <-s.ctx.Done():
		return false
	case <-timer.C:
		pe := signal.Errorf(signal.CodeNotJoined, true, "no join within %v", s.deps.JoinTimeout)
		s.sendError(pe)
		s.cancel(pe)
		return false
	case msg := <-in:
		if msg.Join == nil {
			pe := signal.Errorf(signal.CodeNotJoined, true, "first message must be join, got %q", msg.Type)
			s.sendError(pe)
			s.cancel(pe)
			return false
		}
		if err := s.join(msg.Join); err != nil {
			if errors.Is(err, errRedirected) {
				s.cancel(err)
				return false
			}
			pe := signal.AsProtocolError(err)
			s.sendError(pe)
			s.cancel(pe)
			return false
		}
		return true
	}
}

// handle dispatches one message after join; one handler per message type.
func (s *Session) handle(msg signal.Incoming) error {
	switch msg.Type {
	case signal.TypeJoin:
		return signal.Errorf(signal.CodeBadMessage, false, "already joined")
	case signal.TypeOffer:
		return s.handleOffer(msg.SDP)
	case signal.TypeAnswer:
		return s.handleAnswer(msg.SDP)
	case signal.TypeCandidate:
		return s.handleCandidate(msg.Candidate)
	case signal.TypeMute:
		s.room.SetMute(s, msg.Mute.Audio, msg.Mute.Video)
	case signal.TypePin:
		return pinError(s.room.Pin(s, msg.Pin.ID), msg.Pin.ID)
	case signal.TypeUnpin:
		s.room.Unpin(s, msg.Pin.ID)
	case signal.TypeSetLastN:
		s.room.SetLastN(s, msg.LastN.N)
	case signal.TypeConstraints:
		s.room.SetConstraints(s, msg.Constraints.Videos)
	case signal.TypeRoomSettings:
		if err := s.allow("changing room settings", "admin", s.perms.Admin); err != nil {
			return err
		}
		return s.changeSettings(*msg.Settings)
	case signal.TypeToken:
		return s.handleToken(msg.Token)
	case signal.TypeChat:
		return s.handleChat(msg.Chat)
	case signal.TypeRaiseHand:
		s.room.SetHand(s, msg.Hand.Raised)
	case signal.TypeP2POffer, signal.TypeP2PAnswer, signal.TypeP2PCandidate:
		return s.handleP2P(msg.Type, msg.P2P)
	case signal.TypeP2PState:
		s.room.SetP2PState(s, *msg.P2PState)
	case signal.TypeListParticipants:
		after, _ := signal.ParseCursor(msg.List.Cursor) // validated by the decoder
		s.Send(signal.TypeParticipantPage, s.room.Page(after))
	case signal.TypePing:
		s.Send(signal.TypePong, msg.Ping)
	case signal.TypeLeave:
		s.cancel(errLeft)
	}
	return nil
}

// join admits the client: joins per address, then the token, then the room's and
// server's limits; only then are its peer connections made.
func (s *Session) join(j *signal.Join) error {
	if !s.deps.Joins.Allow(limit.AddressKey(s.remote), s.now()) {
		return signal.Errorf(signal.CodeTooManyJoins, true, "too many joins from your address in the last minute; wait a little and try again")
	}
	perms, claims, err := s.authorize(j.Token, j.Room)
	if err != nil {
		return err
	}
	if j.Audience {
		perms.Publish = false
	}
	if claims != nil && claims.E2EE && !j.E2EE {
		return signal.Errorf(signal.CodeE2EERequired, true, "this room admits only participants who encrypt end to end: open its link with #e2ee=<passphrase>")
	}
	if err := s.place(j.Room, claims, j.Resume != nil); err != nil {
		return err
	}
	s.claims, s.perms = claims, perms
	s.id, s.name = newParticipantID(), j.Name
	identity := ""
	if claims != nil {
		identity = claims.Identity
		if claims.Name != "" {
			s.name = claims.Name // the token's display name: nobody can pose as someone else
		}
	}
	// A resume of another room or identity, or with a wrong secret (say from
	// before a restart), joins as a new participant (docs/protocol.md).
	resumed := j.Resume != nil && validResume(s.deps.ResumeKey, j.Room, identity, j.Resume.ID, j.Resume.Secret)
	if resumed {
		s.id = j.Resume.ID
	}
	s.log = s.log.With("room", j.Room, "participant", s.id)
	if identity != "" {
		s.log = s.log.With("identity", identity)
	}
	if j.Resume != nil && !resumed {
		s.log.Info("resume refused: not this room's, this identity's or a valid secret; joining as a new participant")
	}
	welcome := signal.Welcome{
		Version: signal.Version, ID: s.id, Room: j.Room,
		Resume:      signal.Resume{ID: s.id, Secret: resumeSecret(s.deps.ResumeKey, j.Room, identity, s.id)},
		ICEServers:  s.iceServers(),
		Permissions: &s.perms,
	}
	welcome.Node, welcome.Fallbacks = s.fallbacks()
	info := signal.Participant{ID: s.id, Name: s.name, E2EE: j.E2EE, Audience: !perms.Publish}
	_, existed := s.deps.Hub.Room(j.Room)
	r, others, err := s.deps.Hub.JoinWith(j.Room, s, info, room.JoinOptions{Identity: identity, Permissions: perms, Resume: resumed, Address: limit.AddressKey(s.remote), AudioSlots: j.AudioSlots})
	if err != nil {
		return joinError(err, s.deps.Limits)
	}
	if !existed && s.deps.Inherit != nil {
		if c := s.deps.Inherit(j.Room); c != nil {
			r.UpdateSettings(*c)
		}
	}
	s.room = r
	// Tracks the room subscribes us to are queued work: the connections exist
	// before the loop runs it.
	if err := s.openPeerConnections(); err != nil {
		return signal.Errorf(signal.CodeInternal, true, "peer connection: %v", err)
	}
	welcome.Participants = others
	if welcome.Participants == nil {
		welcome.Participants = []signal.Participant{}
	}
	welcome.ParticipantCount = r.Count()
	s.sendFirst(welcome)
	if notice, ok := s.deps.Hub.Draining(); ok {
		s.Send(signal.TypeDraining, notice)
	}
	if c := s.deps.Counters; c != nil {
		c.Joined.Add(1)
	}
	s.goIn(&s.stats, s.sampleRTT)
	s.log.Info("joined", "name", s.name, "resumed", resumed, "permissions", s.perms)
	return nil
}

// pinError maps the room's refusal of a pin onto a protocol error.
func pinError(err error, id string) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, room.ErrUnknownParticipant):
		return signal.Errorf(signal.CodeUnknownParticipant, false, "pin: %q is not in the room", id)
	case errors.Is(err, room.ErrTooManyPins):
		return signal.Errorf(signal.CodeTooManyPins, false, "pin: at most %d pins; unpin someone first", room.MaxPins)
	}
	return signal.Errorf(signal.CodeInternal, false, "pin: %v", err)
}
