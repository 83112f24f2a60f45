package session

import (
	"errors"
	"time"

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
	for {
		var timeout <-chan time.Time
		if s.nego.timer != nil {
			timeout = s.nego.timer.C
		}
		select {
		case <-s.ctx.Done():
			return
		case msg := <-in:
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
		s.room.Pin(s, msg.Pin.ID)
	case signal.TypeUnpin:
		s.room.Unpin(s, msg.Pin.ID)
	case signal.TypeSetLastN:
		s.room.SetLastN(s, msg.LastN.N)
	case signal.TypeConstraints:
		s.room.SetConstraints(s, msg.Constraints.Videos)
	case signal.TypeRoomSettings:
		s.room.UpdateSettings(msg.Settings.LastN, msg.Settings.OnStage)
	case signal.TypePing:
		s.Send(signal.TypePong, msg.Ping)
	case signal.TypeLeave:
		s.cancel(errLeft)
	}
	return nil
}

func (s *Session) join(j *signal.Join) error {
	s.id, s.name = newParticipantID(), j.Name
	if j.Resume != nil && validResume(s.deps.ResumeKey, j.Room, j.Resume.ID, j.Resume.Secret) {
		s.id = j.Resume.ID
	}
	s.log = s.log.With("room", j.Room, "participant", s.id)
	if err := s.openPeerConnections(); err != nil {
		return signal.Errorf(signal.CodeInternal, true, "peer connection: %v", err)
	}
	welcome := signal.Welcome{
		Version: signal.Version, ID: s.id, Room: j.Room,
		Resume:     signal.Resume{ID: s.id, Secret: resumeSecret(s.deps.ResumeKey, j.Room, s.id)},
		ICEServers: iceServers(s.deps.Engine),
	}
	info := signal.Participant{ID: s.id, Name: s.name}
	r, others, err := s.deps.Hub.Join(j.Room, s, info)
	if errors.Is(err, room.ErrClosed) {
		s.Send(signal.TypeBye, signal.Bye{Reason: err.Error()})
		return signal.Errorf(signal.CodeInternal, true, "%v", err)
	}
	s.room = r
	welcome.Participants = others
	if welcome.Participants == nil {
		welcome.Participants = []signal.Participant{}
	}
	s.sendFirst(welcome)
	s.goIn(&s.stats, s.sampleRTT)
	s.log.Info("joined", "name", s.name, "resumed", j.Resume != nil && s.id == j.Resume.ID)
	return nil
}
