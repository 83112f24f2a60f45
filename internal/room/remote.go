package room

import (
	"slices"
	"time"

	"github.com/podium-sfu/podium/internal/algo/lastn"
	"github.com/podium-sfu/podium/internal/algo/layers"
	"github.com/podium-sfu/podium/internal/forward"
	"github.com/podium-sfu/podium/internal/signal"
)

// Participants served by another bridge of the conference (internal/cascade)
// are members here too, whose Member says Remote: they publish relayed tracks
// that local members subscribe to as to any publisher, are announced to local
// clients, take part in Last N and the speaker order, and receive nothing
// here (no Subscribe permission). They hold no reference on the room: it ends
// with its last local participant.

// remote is implemented by the Member of a participant served elsewhere.
type remote interface{ Remote() bool }

func isRemote(m Member) bool {
	r, ok := m.(remote)
	return ok && r.Remote()
}

// AddRemote enters a participant served by another bridge; m's Remote must
// report true.
func (r *Room) AddRemote(m Member, info signal.Participant) error {
	_, err := r.join(m, info, JoinOptions{Permissions: signal.Permissions{Publish: true}}, 0)
	return err
}

// RemoveRemote takes a participant served elsewhere out (it left, or its
// bridge stopped serving the room).
func (r *Room) RemoveRemote(m Member) { r.leave(m) }

// Local is a participant served here, with its published tracks (its screen
// share's included), as other bridges are told of it.
type Local struct {
	Info signal.Participant
	Ups  []*forward.UpTrack
}

// Locals lists the participants served here, in join order.
func (r *Room) Locals() []Local {
	var out []Local
	r.do(func(s *state) {
		for _, m := range s.sorted() {
			if isRemote(m.m) {
				continue
			}
			l := Local{Info: m.info, Ups: slices.Clone(m.ups)}
			if m.share != nil {
				l.Ups = append(l.Ups, m.share.ups...)
			}
			out = append(out, l)
		}
	})
	return out
}

// SetRemoteDemand records what another bridge's receivers need of the
// sources published here: by source, the video encodings (index 0 lowest)
// relayed to it. Those sources are not paused and those encodings stay on at
// their senders, as if a local receiver needed them. nil forgets the bridge.
func (r *Room) SetRemoteDemand(bridge string, demand map[string][]bool) {
	r.do(func(s *state) {
		if demand == nil {
			delete(s.remoteDemand, bridge)
		} else {
			if s.remoteDemand == nil {
				s.remoteDemand = map[string]map[string][]bool{}
			}
			s.remoteDemand[bridge] = demand
		}
		s.reselect(time.Now())
	})
}

// remoteNeeded adds to needed, by source, the encodings other bridges need.
func (s *state) remoteNeeded(needed map[string][]bool) {
	for _, demand := range s.remoteDemand {
		for source, encs := range demand {
			mark := needed[source]
			for len(mark) < len(encs) {
				mark = append(mark, false)
			}
			for i, on := range encs {
				mark[i] = mark[i] || on
			}
			needed[source] = mark
		}
	}
}

// remoteSources are the sources some other bridge receives video of.
func (s *state) remoteSources() []lastn.ID {
	var out []lastn.ID
	for _, demand := range s.remoteDemand {
		for source, encs := range demand {
			if slices.Contains(encs, true) {
				out = append(out, lastn.ID(source))
			}
		}
	}
	return out
}

// RemoteEncoding is a relayed video encoding as its origin bridge measures
// it: a bridge that receives only the encodings its receivers take cannot.
type RemoteEncoding struct {
	Width, Height int
	Active        bool
	Bitrate       int
	Temporal      [3]int // cumulative, as UpTrack.TemporalBitrates
}

// encodingView is implemented by a remote participant's Member: its sources'
// encodings by index, as last reported by the origin (ok false: unknown).
// Called on the room loop: it must not block.
type encodingView interface {
	Encodings(source string) ([]RemoteEncoding, bool)
}

// remoteEncodings appends to dst m's encodings from its origin's view, for a
// source served elsewhere.
func (m *member) remoteEncodings(dst []layers.Encoding, now time.Time) ([]layers.Encoding, bool) {
	v, ok := m.m.(encodingView)
	if !ok || !isRemote(m.m) {
		return nil, false
	}
	encs, ok := v.Encodings(m.info.ID)
	if !ok {
		return nil, false
	}
	for _, e := range encs {
		dst = append(dst, layers.Encoding{Width: e.Width, Height: e.Height, Active: e.Active, Bitrate: e.Bitrate})
	}
	return dst, true
}

// remoteTemporal is encoding i's temporal rates from its origin's view.
func (m *member) remoteTemporal(now time.Time, i int) ([3]int, bool) {
	v, ok := m.m.(encodingView)
	if !ok || !isRemote(m.m) {
		return [3]int{}, false
	}
	encs, ok := v.Encodings(m.info.ID)
	if !ok || i >= len(encs) {
		return [3]int{}, false
	}
	return encs[i].Temporal, true
}

// noteRemoteWants keeps, of needed, the marks of sources served elsewhere:
// their origins keep those encodings on at the sender (RemoteWants).
func (s *state) noteRemoteWants(needed map[string][]bool) {
	wants := s.remoteWants // RemoteWants copies it on the loop: reused
	if wants == nil {
		wants = map[string][]bool{}
	}
	clear(wants)
	for source, mark := range needed {
		if pub, ok := s.publisher(source); ok && isRemote(pub.m) {
			wants[source] = slices.Clone(mark)
		}
	}
	s.remoteWants = wants
}

// RemoteWants is, by source served elsewhere, the encodings receivers here
// need kept on at its sender (its origin bridge is told; the streams relayed
// are only those receivers take now).
func (r *Room) RemoteWants() map[string][]bool {
	var out map[string][]bool
	r.do(func(s *state) {
		out = make(map[string][]bool, len(s.remoteWants))
		for k, v := range s.remoteWants {
			out[k] = slices.Clone(v)
		}
	})
	return out
}
