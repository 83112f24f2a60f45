package room

import (
	"slices"
	"time"

	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/algo/layers"
	"github.com/podium-sfu/podium/internal/forward"
	"github.com/podium-sfu/podium/internal/rewrite"
	"github.com/podium-sfu/podium/internal/signal"
)

const (
	// layersInterval is how often layer choices are revisited: encodings start and
	// stop, keyframes reveal their sizes, and bandwidth estimates move, without
	// any message. A capacity drop must move receivers down within a few seconds.
	layersInterval = 250 * time.Millisecond
	// activeWindow is how recently an encoding must have sent to count as on.
	activeWindow = time.Second
	// layerOffDelay is how long an encoding must be unneeded before its sender is
	// told to stop it: switching it back on costs the sender a bandwidth ramp-up,
	// and layouts change often (the stage follows the speaker).
	layerOffDelay = 5 * time.Second
	// resumeGrace is how long an encoding the sender was told to switch back on
	// counts as available before it sends: a receiver that enlarges a video is
	// pointed at it at once, so that its first frame, a keyframe, is the switch
	// (no keyframe request, no intermediate layer). A sender that does not
	// start it in time (its own bandwidth) leaves the receiver on what flows.
	resumeGrace = time.Second
)

// simulcastState is what the room knows of a publisher's simulcast encodings.
type simulcastState struct {
	rids       [rewrite.MaxEncodings]string    // declared in the publish offer, by encoding
	lastNeeded [rewrite.MaxEncodings]time.Time // when some receiver last needed each
	resumedAt  [rewrite.MaxEncodings]time.Time // when the sender was last told to switch each back on
}

// resuming reports whether encoding i was switched back on less than
// resumeGrace before now.
func (sc *simulcastState) resuming(i int, now time.Time) bool {
	return !sc.resumedAt[i].IsZero() && now.Sub(sc.resumedAt[i]) < resumeGrace
}

// encodings appends to dst m's simulcast encodings as the layer choice needs
// them: those sending and those declared but not (yet) sending, as inactive.
func (m *member) encodings(dst []layers.Encoding, now time.Time) []layers.Encoding {
	if encs, ok := m.remoteEncodings(dst, now); ok {
		return encs
	}
	ups := m.videoUps()
	n := 0
	for i, up := range ups {
		if up != nil || m.simulcast.rids[i] != "" {
			n = i + 1
		}
	}
	for i := 0; i < n; i++ {
		var e layers.Encoding
		if up := ups[i]; up != nil {
			w, h := up.Size()
			e = layers.Encoding{Width: w, Height: h, Active: up.Active(now, activeWindow), Bitrate: up.Bitrate(now)}
		}
		dst = append(dst, e)
	}
	return dst
}

// videoUps are m's video tracks by encoding index.
func (m *member) videoUps() [rewrite.MaxEncodings]*forward.UpTrack {
	var ups [rewrite.MaxEncodings]*forward.UpTrack
	for _, up := range m.ups {
		if up.Kind() == webrtc.RTPCodecTypeVideo && up.Encoding() < len(ups) {
			ups[up.Encoding()] = up
		}
	}
	return ups
}

// videoDowns are the distinct video DownTracks m receives, by source id.
func (m *member) videoDowns() map[string]*forward.DownTrack {
	return m.fillVideoDowns(map[string]*forward.DownTrack{})
}

// fillVideoDowns is videoDowns into out, cleared first (a layer round's scratch).
func (m *member) fillVideoDowns(out map[string]*forward.DownTrack) map[string]*forward.DownTrack {
	clear(out)
	for up, d := range m.downs {
		if up.Kind() == webrtc.RTPCodecTypeVideo {
			out[up.Source()] = d
		}
	}
	return out
}

// maintainLayers picks every receiver's encoding of every source it receives, tells
// senders which encodings are needed, and notices encodings that stopped.
func (s *state) maintainLayers(now time.Time) {
	lr := &s.layerRound
	if lr.needed == nil {
		lr.needed = map[string][]bool{}
	}
	needed := lr.needed // publisher → encodings someone needs
	clear(needed)
	lr.marks = lr.marks[:0]
	if lr.downs == nil {
		lr.downs = map[string]*forward.DownTrack{}
	}
	for _, m := range s.members {
		downs := m.fillVideoDowns(lr.downs)
		allocated := s.allocate(now, m, downs)
		for source, d := range downs {
			pub, ok := s.publisher(source)
			if !ok {
				continue
			}
			lr.encs = pub.encodings(lr.encs[:0], now)
			encs := lr.encs
			want := s.settings.capWant(m.constraints[source])
			if !allocated {
				choice := layers.Choose(encs, want, 0)
				if choice.Encoding < 0 {
					continue
				}
				d.SetLayer(choice.Encoding, choice.MaxTemporal)
			}
			_, current := d.Layers()
			if current >= 0 && current < len(encs) && !encs[current].Active {
				d.EncodingStopped(current)
				current = -1
			}
			if !d.Selected() {
				continue
			}
			// The sender must keep what the receiver should get, and what it gets
			// now until the switch completes at a keyframe.
			lr.all = append(lr.all[:0], encs...)
			all := lr.all
			for i := range all {
				all[i].Active = true
			}
			mark := needed[source]
			if mark == nil {
				mark = lr.mark(len(encs))
				needed[source] = mark
			}
			// The encodings below it stay on too: they are where bandwidth
			// adaptation moves a receiver at once when its link degrades.
			top := layers.Choose(all, want, 0).Encoding
			for e := 0; e <= top && e < len(mark); e++ {
				if allocated || e == top {
					mark[e] = true
				}
			}
			if current >= 0 && current < len(mark) {
				mark[current] = true
			}
		}
	}
	s.remoteNeeded(needed) // other bridges' receivers (remote.go)
	s.noteRemoteWants(needed)
	resumed := false
	for id, pub := range s.members {
		sc := &pub.simulcast
		if sc.rids == [len(sc.rids)]string{} || pub.paused {
			continue // no simulcast, or paused altogether
		}
		active := lr.active[:0]
		for i, rid := range sc.rids {
			if i < len(needed[id]) && needed[id][i] {
				sc.lastNeeded[i] = now
			}
			if rid != "" && now.Sub(sc.lastNeeded[i]) < layerOffDelay {
				active = append(active, rid)
			}
		}
		lr.active = active
		if len(active) > 0 && !slices.Equal(active, pub.layersSent) {
			active = slices.Clone(active) // kept and sent: not the scratch
			for _, rid := range active {
				if pub.layersSent != nil && !slices.Contains(pub.layersSent, rid) { // switched back on
					sc.resumedAt[EncodingIndex(rid)] = now
					resumed = true
				}
			}
			pub.layersSent = active
			pub.m.Send(signal.TypeLayers, signal.Layers{Active: active})
		}
	}
	if resumed {
		// Point the receivers at what was just switched back on before its
		// first keyframe arrives, not at the next tick.
		for _, m := range s.members {
			s.allocate(now, m, m.fillVideoDowns(lr.downs))
		}
	}
}

// DeclareEncodings records the simulcast RIDs m's publish offer declared (none:
// a single encoding).
func (r *Room) DeclareEncodings(m Member, rids []string) {
	r.doFor(m, func(s *state) {
		cur, ok := s.current(m)
		if !ok {
			return
		}
		// Every declared encoding starts needed: the sender ramps up with all on.
		now := time.Now()
		cur.simulcast = simulcastState{}
		for _, rid := range rids {
			if i := EncodingIndex(rid); cur.simulcast.rids[i] == "" {
				cur.simulcast.rids[i] = rid
				cur.simulcast.lastNeeded[i] = now
			}
		}
	})
}

// EncodingIndex maps a simulcast RID to its place from lowest (0) to highest
// resolution; our client uses q/h/f, other common spellings are accepted.
func EncodingIndex(rid string) int {
	switch rid {
	case "h", "m", "mid", "1":
		return 1
	case "f", "hi", "high", "2":
		return 2
	default: // "", "q", "l", "low", "0"
		return 0
	}
}
