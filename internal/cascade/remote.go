package cascade

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"net/netip"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/forward"
	"github.com/podium-sfu/podium/internal/relay"
	"github.com/podium-sfu/podium/internal/room"
	"github.com/podium-sfu/podium/internal/signal"
)

// The remote side: participants of other bridges in the local rooms, their
// tracks fed by the relay. Owned by Cascade.run, except the dispatch map
// (read by the relay's reader) and each track's queue.

type bridgeKey struct{ room, node string }

// bridge is another bridge's part of a local room.
type bridge struct {
	key    bridgeKey
	rm     *room.Room
	sender uint32
	addr   atomic.Pointer[netip.AddrPort] // its relay socket, for feedback
	seen   time.Time                      // its latest roster
	parts  map[string]*remotePart

	lastSub     time.Time
	lastStreams []uint32
	lastKeep    map[string][]bool
	kept        map[string][]bool // the room's RemoteWants of our sources
	keptAt      time.Time
	pending     atomic.Bool  // a subscription request in flight
	rtt         atomic.Int64 // nanos: the relay probes' RTT, else the latest request's round trip
}

type remotePart struct {
	m      *member
	info   signal.Participant
	tracks map[uint32]*remoteTrack
}

type remotes struct {
	cfg      Config
	addr     *atomic.Pointer[netip.AddrPort] // ours, as told other bridges (Cascade.SetAddr)
	bridges  map[bridgeKey]*bridge
	dispatch atomic.Pointer[map[uint64]*remoteTrack] // sender<<32 | stream
	drops    atomic.Uint64
	reports  atomic.Uint64
	audio    repairCounters // the relay hop's repair, by kind
	video    repairCounters
	parts    atomic.Int64   // participants of other bridges in local rooms
	wg       sync.WaitGroup // subscription requests
}

func newRemotes(cfg Config, addr *atomic.Pointer[netip.AddrPort]) *remotes {
	r := &remotes{cfg: cfg, addr: addr, bridges: map[bridgeKey]*bridge{}}
	r.dispatch.Store(&map[uint64]*remoteTrack{})
	return r
}

func trackKey(sender, stream uint32) uint64 { return uint64(sender)<<32 | uint64(stream) }

// media queues a relayed RTP packet for its track (relay reader; no
// allocation: the track's buffers go round).
func (r *remotes) media(sender, stream uint32, body []byte) {
	t := (*r.dispatch.Load())[trackKey(sender, stream)]
	if t == nil {
		return
	}
	select {
	case p := <-t.free:
		*p = append((*p)[:0], body...)
		t.data <- p // never blocks: as many slots as buffers
	default:
		r.drops.Add(1)
	}
}

// report hands a relayed sender report to its track (relay reader; about
// one a second per stream, so a copy).
func (r *remotes) report(sender, stream uint32, body []byte) {
	t := (*r.dispatch.Load())[trackKey(sender, stream)]
	if t == nil {
		return
	}
	select {
	case t.reports <- append([]byte(nil), body...):
		r.reports.Add(1)
	default:
	}
}

// apply reconciles a local room with a bridge's roster.
func (r *remotes) apply(now time.Time, ro roster) {
	key := bridgeKey{ro.Room, ro.Node}
	rm, ok := r.cfg.Hub.Room(ro.Room)
	b := r.bridges[key]
	if b != nil && (!ok || b.rm != rm) {
		r.teardown(b)
		b = nil
	}
	if !ok {
		return
	}
	addr, err := resolve(ro.Addr)
	if err != nil {
		return
	}
	if b == nil {
		b = &bridge{key: key, rm: rm, parts: map[string]*remotePart{}}
		r.bridges[key] = b
	}
	if b.sender != ro.Sender && b.sender != 0 {
		// The bridge restarted: its streams are new ones.
		r.dropParts(b)
	}
	b.sender, b.seen = ro.Sender, now
	b.addr.Store(&addr)
	changed := false
	listed := map[string]bool{}
	for _, p := range ro.Participants {
		listed[p.Info.ID] = true
		part := b.parts[p.Info.ID]
		if part == nil {
			m := &member{id: p.Info.ID}
			m.setEncodings(p.Tracks)
			if err := rm.AddRemote(m, p.Info); err != nil {
				r.cfg.Log.Debug("cascade: remote participant refused", "room", ro.Room, "id", p.Info.ID, "err", err)
				continue
			}
			part = &remotePart{m: m, info: p.Info, tracks: map[uint32]*remoteTrack{}}
			b.parts[p.Info.ID] = part
		} else {
			if p.Info.AudioMuted != part.info.AudioMuted || p.Info.VideoMuted != part.info.VideoMuted {
				rm.SetMute(part.m, p.Info.AudioMuted, p.Info.VideoMuted)
			}
			if p.Info.HandRaised != part.info.HandRaised {
				rm.SetHand(part.m, p.Info.HandRaised)
			}
			part.info = p.Info
		}
		part.m.setEncodings(p.Tracks)
		// Lowest encoding first: a receiver's DownTrack starts on it.
		tracks := slices.Clone(p.Tracks)
		sort.SliceStable(tracks, func(i, j int) bool { return tracks[i].Encoding < tracks[j].Encoding })
		have := map[uint32]bool{}
		for _, t := range tracks {
			have[t.Stream] = true
			if part.tracks[t.Stream] != nil {
				continue
			}
			counts := &r.video
			if t.Kind == webrtc.RTPCodecTypeAudio.String() {
				counts = &r.audio
			}
			rt := newRemoteTrack(r.cfg.Relay, b, t, counts)
			part.tracks[t.Stream] = rt
			r.wg.Add(2)
			go func() { defer r.wg.Done(); rt.up.Run() }()
			go func() { defer r.wg.Done(); rt.up.ReadFeedback(rt.readReport) }()
			rm.Publish(part.m, rt.up)
			changed = true
		}
		for id, rt := range part.tracks {
			if !have[id] {
				rt.close()
				rm.Unpublish(part.m, rt.up)
				delete(part.tracks, id)
				changed = true
			}
		}
	}
	for id, part := range b.parts {
		if !listed[id] {
			r.dropPart(b, part)
			delete(b.parts, id)
			changed = true
		}
	}
	if changed {
		r.rebuild()
	}
}

func (r *remotes) dropPart(b *bridge, part *remotePart) {
	for _, rt := range part.tracks {
		rt.close()
	}
	b.rm.RemoveRemote(part.m)
}

func (r *remotes) dropParts(b *bridge) {
	for id, part := range b.parts {
		r.dropPart(b, part)
		delete(b.parts, id)
	}
	r.rebuild()
}

// teardown removes a bridge's participants and tells it we want nothing.
func (r *remotes) teardown(b *bridge) {
	r.dropParts(b)
	delete(r.bridges, b.key)
	r.request(b, nil, nil)
}

// rebuild makes the dispatch map anew from the bridges' tracks.
func (r *remotes) rebuild() {
	m := map[uint64]*remoteTrack{}
	parts := 0
	for _, b := range r.bridges {
		parts += len(b.parts)
		for _, p := range b.parts {
			for id, t := range p.tracks {
				m[trackKey(b.sender, id)] = t
			}
		}
	}
	r.dispatch.Store(&m)
	r.parts.Store(int64(parts))
}

// maintain drops bridges gone silent or of rooms no longer served here, and
// sends each bridge the streams its receivers here want (Last N between
// bridges: what some local receiver selects, only the encodings it takes).
func (r *remotes) maintain(now time.Time, rooms map[string]bool) {
	for _, b := range r.bridges {
		if !rooms[b.key.room] || now.Sub(b.seen) > rosterTTL {
			r.teardown(b)
			continue
		}
		var want []uint32
		for _, p := range b.parts {
			for id, t := range p.tracks {
				if t.wanted() {
					want = append(want, id)
				}
			}
		}
		slices.Sort(want)
		keep := r.keep(now, b)
		if !slices.Equal(want, b.lastStreams) || !sameDemand(keep, b.lastKeep) || now.Sub(b.lastSub) >= subscribeEvery {
			if r.request(b, want, keep) {
				b.lastStreams, b.lastKeep, b.lastSub = want, keep, now
			}
		}
	}
}

// keepEvery is how often the encodings wanted of other bridges' senders are
// read from a room.
const keepEvery = 250 * time.Millisecond

// keep is what b's senders must keep sending for receivers here (the room's
// RemoteWants of b's sources), read from the room every keepEvery.
func (r *remotes) keep(now time.Time, b *bridge) map[string][]bool {
	if now.Sub(b.keptAt) < keepEvery {
		return b.kept
	}
	all := b.rm.RemoteWants()
	out := map[string][]bool{}
	for _, p := range b.parts {
		for _, t := range p.tracks {
			if w, ok := all[t.source]; ok {
				out[t.source] = w
			}
		}
	}
	b.kept, b.keptAt = out, now
	return out
}

// request sends b the subscription in the background; false: one is still
// in flight.
func (r *remotes) request(b *bridge, want []uint32, keep map[string][]bool) bool {
	if !b.pending.CompareAndSwap(false, true) {
		return false
	}
	s := subscription{Room: b.key.room, Node: r.cfg.Node.ID(), Addr: r.addr.Load().String(),
		RTTMS: float64(b.rtt.Load()) / 1e6, Streams: want, Keep: keep}
	if s.Streams == nil {
		s.Streams = []uint32{}
	}
	body, _ := json.Marshal(s)
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer b.pending.Store(false)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		t0 := time.Now()
		if _, err := r.cfg.Node.Request(ctx, b.key.node, subscribeName, body); err != nil {
			r.cfg.Log.Debug("cascade: subscription", "bridge", b.key.node, "room", b.key.room, "err", err)
			return
		}
		rtt := time.Since(t0)
		if f := r.cfg.RelayRTT; f != nil {
			if d, ok := f(b.key.node, time.Now()); ok {
				rtt = d // the relay's own path, not the NATS route's
			}
		}
		b.rtt.Store(int64(rtt))
	}()
	return true
}

func (r *remotes) closeAll() {
	for _, b := range r.bridges {
		r.teardown(b)
	}
	r.wg.Wait()
}

func (r *remotes) stats() Stats {
	st := Stats{QueueDrops: r.drops.Load(), RemoteParticipants: int(r.parts.Load()), Reports: r.reports.Load(),
		AudioRepair: r.audio.load(), VideoRepair: r.video.load()}
	for _, t := range *r.dispatch.Load() {
		if t.wanted() {
			st.RelayedIn++
		}
	}
	return st
}

// queueSlots is how many relayed packets of one track may wait for its reader.
const queueSlots = 64

// remoteTrack is one relayed stream here: an UpTrack whose Read takes the
// relay's packets, which local receivers subscribe to as to a publisher's.
type remoteTrack struct {
	t      *relay.Transport
	b      *bridge
	stream uint32
	source string
	up     *forward.UpTrack
	data   chan *[]byte
	free   chan *[]byte
	done   chan struct{}
	once   sync.Once
	// reports carries the origin's sender reports to the track's reader.
	reports chan []byte

	// The reader's (up.Run) only.
	gaps  gapDetector
	timer *time.Timer // fires when a retry is due
	armed time.Time   // what timer was set for
	fb    []byte
}

func newRemoteTrack(t *relay.Transport, b *bridge, info rosterTrack, counts *repairCounters) *remoteTrack {
	rt := &remoteTrack{t: t, b: b, stream: info.Stream, source: info.Source, data: make(chan *[]byte, queueSlots), free: make(chan *[]byte, queueSlots),
		done: make(chan struct{}), fb: make([]byte, 0, 1+4*relay.MaxNACKPairs), reports: make(chan []byte, 4),
		gaps: gapDetector{counts: counts}, timer: time.NewTimer(time.Hour)}
	rt.timer.Stop()
	for range queueSlots {
		p := make([]byte, 0, relay.MaxBody)
		rt.free <- &p
	}
	kind := webrtc.RTPCodecTypeVideo
	var ext uint8
	if info.Kind == webrtc.RTPCodecTypeAudio.String() {
		kind, ext = webrtc.RTPCodecTypeAudio, audioLevelExt
	}
	rt.up = forward.NewUpTrack(forward.UpTrackParams{
		Source: info.Source, Kind: kind, SSRC: info.Stream, Codec: info.Codec,
		Read: rt.read, SendKeyframeRequest: rt.keyframe, AudioLevelExtID: ext,
		RID: info.RID, Encoding: info.Encoding,
	})
	return rt
}

func (rt *remoteTrack) close() { rt.once.Do(func() { close(rt.done) }) }

// wanted: some local receiver takes this stream now; audio always, since
// the speaker detector here needs every microphone's levels to select whom
// receivers with audio slots hear (one stream per speaker per bridge).
func (rt *remoteTrack) wanted() bool {
	if rt.up.Kind() == webrtc.RTPCodecTypeAudio {
		return true
	}
	return rt.up.Wanted()
}

func (rt *remoteTrack) read(b []byte) (int, error) {
	for {
		select {
		case p := <-rt.data:
			n := copy(b, *p)
			rt.free <- p
			rt.received(time.Now(), b[:n])
			return n, nil
		case <-rt.timer.C:
			// Retries go on while no packet comes: DTX audio sends one
			// every 400 ms.
			rt.armed = time.Time{}
			rt.retry(time.Now())
		case <-rt.done:
			rt.timer.Stop()
			rt.gaps.end()
			return 0, io.EOF
		}
	}
}

// readReport is the track's RTCP reader (UpTrack.ReadFeedback): the
// origin's sender reports, which the track passes on to its receivers.
func (rt *remoteTrack) readReport(b []byte) (int, error) {
	select {
	case p := <-rt.reports:
		return copy(b, p), nil
	case <-rt.done:
		return 0, io.EOF
	}
}

// received runs the gap detector on a packet read (the track's reader).
func (rt *remoteTrack) received(now time.Time, pkt []byte) {
	if len(pkt) < 12 {
		return
	}
	rt.gaps.received(now, binary.BigEndian.Uint16(pkt[2:]), time.Duration(rt.b.rtt.Load()))
	rt.retry(now)
}

// retry NACKs, over the relay, what the gap detector says to ask its origin
// for now, which the origin answers from its packet store (repair on the
// relay hop), and sets the timer for the next retry.
func (rt *remoteTrack) retry(now time.Time) {
	rt.gaps.retry(now, time.Duration(rt.b.rtt.Load()))
	if pairs := rt.gaps.take(); len(pairs) > 0 {
		if addr := rt.b.addr.Load(); addr != nil {
			_ = rt.t.Send(now, *addr, relay.KindFeedback, rt.stream, relay.AppendNACK(rt.fb[:0], pairs))
		}
	}
	if next := rt.gaps.next(); !next.IsZero() && !next.Equal(rt.armed) {
		rt.armed = next
		rt.timer.Reset(next.Sub(now))
	}
}

// keyframe asks the origin for a keyframe of the stream.
func (rt *remoteTrack) keyframe(uint32) error {
	addr := rt.b.addr.Load()
	if addr == nil {
		return nil
	}
	var b [1]byte
	return rt.t.Send(time.Now(), *addr, relay.KindFeedback, rt.stream, relay.AppendKeyframeRequest(b[:0]))
}

// member is a participant of another bridge as the local room sees it: it
// receives nothing here and its messages go nowhere. Its encodings are as its
// origin measures them (room's encodingView).
type member struct {
	id   string
	mu   sync.Mutex
	encs map[string][]room.RemoteEncoding // by source
}

// Encodings implements the room's encodingView.
func (m *member) Encodings(source string) ([]room.RemoteEncoding, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.encs[source]
	return e, ok
}

// setEncodings records the origin's view of the participant's video.
func (m *member) setEncodings(tracks []rosterTrack) {
	encs := map[string][]room.RemoteEncoding{}
	for _, t := range tracks {
		if t.Kind != webrtc.RTPCodecTypeVideo.String() || t.Encoding < 0 || t.Encoding > 3 {
			continue
		}
		e := encs[t.Source]
		for len(e) <= t.Encoding {
			e = append(e, room.RemoteEncoding{})
		}
		e[t.Encoding] = room.RemoteEncoding{Width: t.Width, Height: t.Height, Active: t.Active, Bitrate: t.Bitrate, Temporal: t.Temporal}
		encs[t.Source] = e
	}
	m.mu.Lock()
	m.encs = encs
	m.mu.Unlock()
}

func (m *member) ID() string                              { return m.id }
func (m *member) Send(string, any)                        {}
func (m *member) AddDownTrack(*forward.DownTrack)         {}
func (m *member) RemoveDownTrack(*forward.DownTrack)      {}
func (m *member) Replaced()                               {}
func (m *member) RTT() (publish, subscribe time.Duration) { return 0, 0 }
func (m *member) Remove(string, string)                   {}
func (m *member) Failed(string)                           {}
func (m *member) Link() *forward.Link                     { return nil }
func (m *member) Remote() bool                            { return true }
