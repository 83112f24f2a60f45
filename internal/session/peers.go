package session

import (
	"slices"
	"time"

	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/forward"
	"github.com/podium-sfu/podium/internal/peer"
	"github.com/podium-sfu/podium/internal/room"
	"github.com/podium-sfu/podium/internal/signal"
)

// openPeerConnections makes the subscribe connection, and the publish one when
// the session may publish: an audience member (no publish permission) costs none.
func (s *Session) openPeerConnections() error {
	var err error
	if s.sub, err = s.deps.Engine.NewSubscribePC(); err != nil {
		return err
	}
	s.route = s.deps.Engine.Route(s.sub, s.link.HandleRTCP)
	pcs := map[string]*webrtc.PeerConnection{signal.PCSubscribe: s.sub}
	if s.perms.Publish {
		if err := s.openPublishPC(); err != nil {
			return err
		}
		pcs[signal.PCPublish] = s.pub
	}
	for name, pc := range pcs {
		name, pc := name, pc
		pc.OnICECandidate(func(c *webrtc.ICECandidate) {
			if c == nil {
				return
			}
			init := c.ToJSON()
			s.Send(signal.TypeCandidate, signal.TrickleCandidate{PC: name, Candidate: &signal.Candidate{
				Candidate: init.Candidate, SDPMid: init.SDPMid, SDPMLineIndex: init.SDPMLineIndex,
				UsernameFragment: init.UsernameFragment,
			}})
		})
		pc.OnConnectionStateChange(func(st webrtc.PeerConnectionState) { s.transportChanged(name, st) })
	}
	s.goOwned(func() { s.link.Run(s.ctx.Done()) })
	return nil
}

func (s *Session) openPublishPC() error {
	var err error
	if s.pub, err = s.deps.Engine.NewPublishPC(); err != nil {
		return err
	}
	if in, route := s.deps.Engine.Publish(s.pub); in != nil {
		s.pubRoute = route
		s.recv = newReceived(in, route)
		s.goOwned(func() {
			s.recv.run(s.ctx.Done(), func() time.Duration { p, _ := s.RTT(); return p }, s.pub.WriteRTCP)
		})
	}
	s.pub.OnTrack(s.onTrack)
	return nil
}

// Link implements room.Member.
func (s *Session) Link() *forward.Link { return s.link }

// onTrack runs on a pion goroutine when the client's media starts arriving.
func (s *Session) onTrack(track *webrtc.TrackRemote, receiver *webrtc.RTPReceiver) {
	source, encoding := s.id, room.EncodingIndex(track.RID())
	if s.screenTrack(receiver) {
		source, encoding = signal.ScreenSource(s.id), 0 // one encoding (checkScreenMids)
	}
	params := peer.UpTrackParams(s.pub, track, receiver)
	params.Source, params.Encoding, params.Meter = source, encoding, s.deps.Meter
	up := forward.NewUpTrack(params)
	s.goOwned(func() { peer.ReadFeedback(up, track, receiver) })
	s.goIn(&s.tracks, func() {
		s.room.Publish(s, up)
		if s.recv != nil {
			s.recv.add(up) // its packets are read at the socket from now on; pion's leftovers and repairs by Run
			defer s.recv.remove(up)
		}
		up.Run()
		s.room.Unpublish(s, up)
	})
}

func (s *Session) handleOffer(m *signal.SDP) error {
	if m.PC != signal.PCPublish {
		return signal.Errorf(signal.CodeBadSDP, false, "offers are accepted on the publish connection only")
	}
	if s.pub == nil {
		return signal.Errorf(signal.CodeForbidden, false, "you joined as audience (no publish permission): rejoin with a token that grants publish to send media")
	}
	if err := s.checkPublishOffer(m.SDP); err != nil {
		return err
	}
	if err := checkScreenMids(m.SDP, m.ScreenMids); err != nil {
		return err
	}
	mids := slices.Clone(m.ScreenMids)
	s.screenMids.Store(&mids)
	if err := s.pub.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeOffer, SDP: m.SDP}); err != nil {
		return signal.Errorf(signal.CodeBadSDP, false, "publish offer: %v", err)
	}
	s.flushCandidates(signal.PCPublish, s.pub)
	s.room.DeclareEncodings(s, peer.OfferedRIDs(m.SDP))
	answer, err := s.pub.CreateAnswer(nil)
	if err != nil {
		return signal.Errorf(signal.CodeBadSDP, false, "publish answer: %v", err)
	}
	if err := s.pub.SetLocalDescription(answer); err != nil {
		return signal.Errorf(signal.CodeBadSDP, false, "publish answer: %v", err)
	}
	s.Send(signal.TypeAnswer, signal.SDP{PC: signal.PCPublish, SDP: answer.SDP})
	return nil
}

func (s *Session) handleAnswer(m *signal.SDP) error {
	if m.PC != signal.PCSubscribe || !s.nego.waiting() {
		return signal.Errorf(signal.CodeBadSDP, false, "no offer is waiting for an answer on %s", m.PC)
	}
	if err := s.sub.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeAnswer, SDP: m.SDP}); err != nil {
		// A broken answer must not wedge negotiation. Pion cannot roll a local offer
		// back, so while it is still pending it is sent again, after the error (the
		// negotiation timeout keeps running); if pion got as far as stable, offer afresh.
		if offer := s.sub.PendingLocalDescription(); offer != nil && s.sub.SignalingState() == webrtc.SignalingStateHaveLocalOffer {
			again := signal.SDP{PC: signal.PCSubscribe, SDP: offer.SDP}
			s.work.push(func() { s.Send(signal.TypeOffer, again) })
		} else {
			s.nego.answered()
			s.nego.changed()
		}
		return signal.Errorf(signal.CodeBadSDP, false, "subscribe answer: %v", err)
	}
	s.nego.answered()
	s.flushCandidates(signal.PCSubscribe, s.sub)
	return nil
}

func (s *Session) handleCandidate(m *signal.TrickleCandidate) error {
	if m.Candidate == nil || m.Candidate.Candidate == "" {
		return nil // end of candidates: nothing to do for an ICE-lite-like server
	}
	c := webrtc.ICECandidateInit{
		Candidate: m.Candidate.Candidate, SDPMid: m.Candidate.SDPMid,
		SDPMLineIndex: m.Candidate.SDPMLineIndex, UsernameFragment: m.Candidate.UsernameFragment,
	}
	pc := s.pcNamed(m.PC)
	if pc == nil {
		return nil // an audience member's: its publish offer was refused already
	}
	if pc.RemoteDescription() == nil {
		if len(s.pending[m.PC]) >= maxPendingCandidates {
			return signal.Errorf(signal.CodeBadCandidate, false, "too many candidates before the description")
		}
		s.pending[m.PC] = append(s.pending[m.PC], c)
		return nil
	}
	if err := pc.AddICECandidate(c); err != nil {
		return signal.Errorf(signal.CodeBadCandidate, false, "%v", err)
	}
	return nil
}

const maxPendingCandidates = 64

func (s *Session) flushCandidates(name string, pc *webrtc.PeerConnection) {
	for _, c := range s.pending[name] {
		if err := pc.AddICECandidate(c); err != nil {
			s.sendError(signal.Errorf(signal.CodeBadCandidate, false, "%v", err))
		}
	}
	delete(s.pending, name)
}

func (s *Session) pcNamed(name string) *webrtc.PeerConnection {
	if name == signal.PCPublish {
		return s.pub
	}
	return s.sub
}

// addDown starts sending d to this client and schedules a renegotiation.
func (s *Session) addDown(d *forward.DownTrack) {
	d.SetLink(s.link)
	d.SetRoute(s.route)
	sender, err := s.sub.AddTrack(d)
	if err != nil {
		d.SetLink(nil)
		s.log.Warn("add track", "err", err)
		return
	}
	s.senders[d] = sender
	d.SetRTCPWriter(s.sub.WriteRTCP)
	s.goOwned(func() {
		d.ReadFeedback(func(b []byte) (int, error) {
			n, _, err := sender.Read(b)
			return n, err
		})
	})
	s.nego.changed()
}

func (s *Session) removeDown(d *forward.DownTrack) {
	sender, ok := s.senders[d]
	if !ok {
		return
	}
	delete(s.senders, d)
	d.SetLink(nil)
	if err := s.sub.RemoveTrack(sender); err != nil {
		s.log.Debug("remove track", "err", err)
	}
	s.nego.changed()
}

// shutdown leaves the room and closes both connections; afterwards no goroutine of
// the session starts and every callback is a no-op.
func (s *Session) shutdown() {
	s.cancel(errSessionEnded) // no-op when already cancelled; stops the RTT sampler
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	s.nego.stop()
	s.stats.Wait() // the context is done, so the sampler is returning
	for _, pc := range []*webrtc.PeerConnection{s.pub, s.sub} {
		if pc != nil {
			_ = pc.Close()
		}
	}
	if s.room != nil {
		// Up-track goroutines call the room until they end; wait before leaving it.
		s.tracks.Wait()
		s.deps.Hub.Leave(s.room, s)
		s.log.Info("left", "cause", causeText(s.ctx))
	}
}

func iceServers(e *peer.Engine) []signal.ICEServer {
	out := []signal.ICEServer{}
	for _, srv := range e.ICEServers() {
		out = append(out, signal.ICEServer{URLs: srv.URLs})
	}
	return out
}

// negotiation serializes the SFU's offers on the subscribe connection: one offer at
// a time, changes made meanwhile folded into the next one.
type negotiation struct {
	dirty   bool
	offered bool
	timer   *time.Timer
}

func (n *negotiation) changed()      { n.dirty = true }
func (n *negotiation) waiting() bool { return n.offered }

func (n *negotiation) answered() {
	n.offered = false
	n.stop()
}

func (n *negotiation) stop() {
	if n.timer != nil {
		n.timer.Stop()
		n.timer = nil
	}
}

// flush sends an offer when something changed and none is outstanding.
func (n *negotiation) flush(s *Session) {
	if !n.dirty || n.offered || s.ctx.Err() != nil {
		return
	}
	n.dirty = false
	offer, err := s.sub.CreateOffer(nil)
	if err == nil {
		err = s.sub.SetLocalDescription(offer)
	}
	if err != nil {
		s.log.Error("subscribe offer", "err", err)
		s.cancel(err)
		return
	}
	n.offered = true
	n.timer = time.NewTimer(s.deps.NegotiationTimeout)
	s.Send(signal.TypeOffer, signal.SDP{PC: signal.PCSubscribe, SDP: offer.SDP})
}
