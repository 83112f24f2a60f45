package room

import (
	"fmt"
	"slices"
	"time"

	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/algo/alloc"
	"github.com/podium-sfu/podium/internal/algo/bwe"
	"github.com/podium-sfu/podium/internal/forward"
	"github.com/podium-sfu/podium/internal/signal"
)

// statsInterval is how often a receiver is sent its downlink stats.
const statsInterval = time.Second

// keptSwitches is how many recent switch events a receiver's stats keep.
const keptSwitches = 16

// SwitchEvent is one change of what a receiver gets of a video: layers are
// "encoding/temporal" ("2/2": the top of L1T3 simulcast), or "suspended".
type SwitchEvent struct {
	At       time.Time `json:"at"`
	Source   string    `json:"source"`
	From     string    `json:"from"`
	To       string    `json:"to"`
	Estimate int       `json:"estimate"` // the budget it was decided under, bits/s
	// Ceiling is the highest encoding the video's breaks on a crowded path
	// allowed (alloc.BreakCeiling); -1: none.
	Ceiling int `json:"ceiling"`
}

func layerName(a alloc.Allocation) string {
	if a.Suspended {
		return "suspended"
	}
	return fmt.Sprintf("%d/%d", a.Encoding, a.MaxTemporal)
}

// bandwidthState is a receiver's layer allocation under its bandwidth estimate.
type bandwidthState struct {
	alloc     *alloc.Allocator
	last      map[string]alloc.Allocation    // by source, as last applied
	allocated int                            // bits/s of the last allocation, audio included
	switches  int                            // allocation changes of a playing video since join
	events    []SwitchEvent                  // the latest keptSwitches of them, oldest first
	ceilings  map[string]*alloc.BreakCeiling // by source: breaks on a crowded path hold it lower
	suspended []string                       // last told to the client
	told      bool
	nextStats time.Time
	stats     signal.Stats // last sent; its Videos map is reused
}

func newBandwidthState() bandwidthState {
	return bandwidthState{alloc: alloc.New(alloc.DefaultConfig()), last: map[string]alloc.Allocation{},
		ceilings: map[string]*alloc.BreakCeiling{}}
}

// allocate distributes m's bandwidth estimate over the videos it receives, in
// its priority order (pins, then on stage and speaker order: m.forwarded), and
// applies the result to its DownTracks. It reports false when m's connection has
// no congestion control, so that layers follow the constraints alone.
func (s *state) allocate(now time.Time, m *member, downs map[string]*forward.DownTrack) bool {
	link := m.m.Link()
	if link == nil {
		return false
	}
	bw := &m.bw
	lr := &s.layerRound
	sources := lr.sources[:0]
	lr.allocs = lr.allocs[:0]
	for i, id := range m.forwarded {
		pub, ok := s.publisher(string(id))
		if _, forwarded := downs[string(id)]; !ok || !forwarded {
			continue
		}
		ls := pub.allocLayers(lr, now)
		if c := bw.breakCeiling(now, string(id), downs[string(id)], link); c >= 0 && c+1 < len(ls) {
			ls = ls[:c+1]
		}
		sources = append(sources, alloc.Source{ID: string(id), Priority: i, Layers: ls, Want: s.settings.capWant(m.constraints[string(id)])})
	}
	lr.sources = sources
	sharesFirst(sources)
	audio := s.audioBitrate(now, m)
	// What the receiver demonstrably gets is a floor under the estimate: when
	// even the lowest layers keep the link full, each overuse cuts the estimate
	// again (down to its minimum) although the rate we send cannot fall, and
	// following it would suspend video the link carries (measured on 128 kb/s).
	budget := max(link.Estimate(), link.Delivered())
	applyRED(m, useRED(budget, link.Competing()))
	out := bw.alloc.Allocate(now, budget, audio, sources)
	link.SetDesired(probeTarget(bw.alloc.Desired(), audio, sources, out, bw.alloc.Config().UpMargin))
	link.SetWanted(bw.alloc.Desired())

	bw.allocated = audio
	suspended := lr.suspended[:0]
	if lr.seen == nil {
		lr.seen = map[string]bool{}
	}
	seen := lr.seen
	clear(seen)
	for i, a := range out {
		seen[a.ID] = true
		d := downs[a.ID]
		if _, cur := d.Layers(); a.Encoding >= 0 && cur > a.Encoding && (a.Encoding < sources[i].WantedEncoding() || a.Encoding+1 == len(sources[i].Layers)) {
			// Down for bandwidth, or under a break ceiling: stop the congesting
			// or broken layer now.
			d.ShedLayer(a.Encoding, a.MaxTemporal)
		} else if a.Encoding >= 0 {
			d.SetLayer(a.Encoding, a.MaxTemporal)
		}
		d.SetSuspended(a.Suspended)
		if a.Suspended {
			suspended = append(suspended, a.ID)
		}
		bw.allocated += a.Bitrate
		// A switch changes what a playing video gets (an allocation with no
		// active encoding to pay for costs nothing and plays nothing).
		if prev, ok := bw.last[a.ID]; ok && (prev.Bitrate > 0 || prev.Suspended) &&
			(prev.Encoding != a.Encoding || prev.MaxTemporal != a.MaxTemporal || prev.Suspended != a.Suspended) {
			bw.switches++
			if len(bw.events) == keptSwitches {
				bw.events = append(bw.events[:0], bw.events[1:]...)
			}
			bw.events = append(bw.events, SwitchEvent{At: now, Source: a.ID, From: layerName(prev), To: layerName(a), Estimate: budget, Ceiling: bw.ceilings[a.ID].Held()})
		}
		bw.last[a.ID] = a
	}
	for id := range bw.last {
		if !seen[id] {
			delete(bw.last, id) // out of the selection: its next allocation is a fresh start
		}
	}
	for id := range bw.ceilings {
		if !seen[id] {
			delete(bw.ceilings, id)
		}
	}
	// Videos outside the selection are not suspended, just not forwarded.
	for id, d := range downs {
		if !seen[id] {
			d.SetSuspended(false)
		}
	}
	lr.suspended = suspended
	if !bw.told || !slices.Equal(suspended, bw.suspended) {
		suspended = append([]string{}, suspended...) // kept and sent: not the scratch
		bw.suspended, bw.told = suspended, true
		m.m.Send(signal.TypeSuspended, signal.Suspended{IDs: suspended})
	}
	if !now.Before(bw.nextStats) {
		bw.nextStats = now.Add(statsInterval)
		if bw.stats.Videos == nil {
			bw.stats.Videos = map[string]signal.VideoStats{}
		}
		bw.stats = m.downlinkStats(link, bw.stats.Videos)
		m.m.Send(signal.TypeStats, &bw.stats) // encoded before Send returns
	}
	return true
}

// breakCeiling is the highest encoding source id may get while its picture
// breaks on a crowded path (alloc.BreakCeiling), -1 for none.
// The breaks are counted on the encoding last allocated: after a segment is
// given up the DownTrack forwards none until the next keyframe.
func (bw *bandwidthState) breakCeiling(now time.Time, id string, d *forward.DownTrack, link *forward.Link) int {
	c := bw.ceilings[id]
	if c == nil {
		c = &alloc.BreakCeiling{}
		bw.ceilings[id] = c
	}
	current := -1
	if a, ok := bw.last[id]; ok && !a.Suspended {
		current = a.Encoding
	}
	loss, queue := link.Path()
	return c.Update(now, d.Breaks(), current, bwe.Crowded(loss, queue), bwe.Clear(loss, queue))
}

// heldCeilings are the break ceilings in force, by source; nil when none.
func (bw *bandwidthState) heldCeilings() map[string]int {
	var held map[string]int
	for id, c := range bw.ceilings {
		if h := c.Held(); h >= 0 {
			if held == nil {
				held = map[string]int{}
			}
			held[id] = h
		}
	}
	return held
}

// probeTarget is the rate the prober climbs toward: what the allocator wants
// (nothing once every video is on its top step), or more when a video would
// take more on stage. Enlarging a video then finds its top encoding within
// the estimate, with the allocator's upgrade margin, and switches up at its
// next keyframe instead of after a probe and a dwell. Encodings switched off
// because nobody shows them large count at their last measured rate:
// enlarging the video turns them on.
func probeTarget(desired, audio int, sources []alloc.Source, out []alloc.Allocation, upMargin float64) int {
	allocated, headroom := 0, 0
	for i, src := range sources {
		top := 0
		for _, l := range src.Layers {
			top = max(top, l.Bitrate[alloc.MaxTemporal])
		}
		allocated += out[i].Bitrate
		headroom = max(headroom, top-out[i].Bitrate)
	}
	if headroom == 0 {
		return desired
	}
	return max(desired, audio+int(float64(allocated+headroom)*(1+upMargin)))
}

// downlinkStats is what the client is told of its downlink, its videos in
// videos (cleared first).
func (m *member) downlinkStats(link *forward.Link, videos map[string]signal.VideoStats) signal.Stats {
	clear(videos)
	st := signal.Stats{Estimate: link.Estimate(), Allocated: m.bw.allocated, Switches: m.bw.switches, Videos: videos}
	for id, a := range m.bw.last {
		enc := a.Encoding
		if a.Suspended {
			enc = -1
		}
		st.Videos[id] = signal.VideoStats{Encoding: enc, Temporal: a.MaxTemporal, Bitrate: a.Bitrate, Suspended: a.Suspended}
	}
	return st
}

// audioBitrate is what m receives of everyone's audio: it is never starved, so
// the allocator reserves it before video.
func (s *state) audioBitrate(now time.Time, m *member) int {
	total := 0
	for up := range m.downs {
		if up.Kind() != webrtc.RTPCodecTypeAudio || up.Muted() {
			continue
		}
		total += up.Bitrate(now)
	}
	return total
}

// allocLayers describes m's simulcast encodings for the allocator, with the
// measured rate of each temporal layer (for an encoding switched off, its rate
// when last measured). An encoding the sender was just told to switch back on
// counts as active if it sent before. They are appended to lr.allocs: valid
// until the next allocate.
func (m *member) allocLayers(lr *layerRound, now time.Time) []alloc.Layer {
	lr.allocEncs = m.encodings(lr.allocEncs[:0], now)
	ups := m.videoUps()
	start := len(lr.allocs)
	for i, e := range lr.allocEncs {
		l := alloc.Layer{Width: e.Width, Height: e.Height, Active: e.Active}
		if up := ups[i]; up != nil {
			l.Active = e.Active || m.simulcast.resuming(i, now)
			l.Bitrate = up.TemporalBitrates(now)
		}
		if tl, ok := m.remoteTemporal(now, i); ok { // measured at its origin bridge
			l.Bitrate = tl
		}
		lr.allocs = append(lr.allocs, l)
	}
	return lr.allocs[start:len(lr.allocs):len(lr.allocs)]
}
