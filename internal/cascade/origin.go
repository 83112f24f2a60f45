package cascade

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/interceptor"
	"github.com/pion/rtcp"
	"github.com/pion/rtp"
	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/forward"
	"github.com/podium-sfu/podium/internal/relay"
)

// The origin side: the tracks published here, relayed to the bridges that
// subscribe to them. Each subscription is a DownTrack of the source's
// encoding whose writer seals into relay datagrams, so the relay hop gets
// what a receiver gets — a stream that starts at a keyframe, keyframe
// requests aggregated at the source, NACKs answered from the source's
// packet store — with one stream per encoding (no projection between them:
// the subscriber's receivers each pick theirs).

// subscription is a subscribe request: a bridge's whole demand in a room.
type subscription struct {
	Room    string   `json:"room"`
	Node    string   `json:"node"`
	Addr    string   `json:"addr"`    // its relay socket
	RTTMS   float64  `json:"rttMs"`   // its round trip to this node, measured on the request before
	Streams []uint32 `json:"streams"` // this node's stream ids it wants
	// Keep are the video encodings, by source, its receivers need kept on at
	// the sender, relayed or not yet (a receiver switching up needs the
	// encoding sent before it can take it).
	Keep map[string][]bool `json:"keep,omitempty"`
}

type subscribeReply struct {
	Sender uint32 `json:"sender"`
}

// kept is what a subscription asked kept on at the senders, and when.
type kept struct {
	encs map[string][]bool
	at   time.Time
}

type outStream struct {
	room string
	up   *forward.UpTrack
}

type subKey struct {
	node   string
	stream uint32
}

// relayDown is one stream relayed to one bridge.
type relayDown struct {
	room      string
	stream    uint32
	up        *forward.UpTrack
	d         *forward.DownTrack
	w         *relayWriter
	refreshed time.Time
	// rtt (nanoseconds) is set by subscriptions and read by the relay
	// reader's allowResend.
	rtt    atomic.Int64
	resent [resendSlots]resendMark // the one-RTT rule (thesis 8.3.4); relay reader only
}

// resendSlots is how many recent retransmissions the one-RTT rule remembers.
const resendSlots = 512

type resendMark struct {
	seq uint16
	at  int64 // unix nanos; 0: none
}

// allowResend is the one-RTT rule of thesis 8.3.4: a packet is retransmitted
// at most once per round trip — a second NACK for it within one RTT crossed
// the first retransmission on the way.
func (r *relayDown) allowResend(now time.Time, seq uint16) bool {
	m := &r.resent[seq%resendSlots]
	if m.at != 0 && m.seq == seq && now.UnixNano()-m.at < r.rtt.Load() {
		return false
	}
	*m = resendMark{seq: seq, at: now.UnixNano()}
	return true
}

type origin struct {
	cfg Config

	mu      sync.Mutex
	ids     map[*forward.UpTrack]uint32
	streams map[uint32]outStream
	next    uint32
	subs    map[subKey]*relayDown
	demand  map[string]map[string]map[string][]bool // room → node → source → encodings, as last told the room
	keep    map[bridgeKey]kept                      // what each bridge's subscription asked kept on
	resends resendCounters

	// The relay reader's scratch: feedback parsed, a NACK for a relayed
	// video DownTrack, an audio packet being resent.
	fb    relay.Feedback
	seqs  []uint16 // of one NACK pair
	nack  rtcp.TransportLayerNack
	audio [audioSlotSize]byte
}

func newOrigin(cfg Config) *origin {
	return &origin{cfg: cfg, ids: map[*forward.UpTrack]uint32{}, streams: map[uint32]outStream{}, next: rand.Uint32(),
		subs: map[subKey]*relayDown{}, demand: map[string]map[string]map[string][]bool{}, keep: map[bridgeKey]kept{}}
}

// streamID names up on the relay (stable while it lives).
func (o *origin) streamID(room string, up *forward.UpTrack) uint32 {
	o.mu.Lock()
	defer o.mu.Unlock()
	if id, ok := o.ids[up]; ok {
		return id
	}
	o.next++
	o.ids[up] = o.next
	o.streams[o.next] = outStream{room: room, up: up}
	return o.next
}

func (o *origin) count() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.subs)
}

// subscribe answers a bridge's subscription (NATS request/reply).
func (o *origin) subscribe(req []byte) ([]byte, error) {
	var s subscription
	if err := json.Unmarshal(req, &s); err != nil {
		return nil, fmt.Errorf("cascade: subscription: %w", err)
	}
	if s.Node == "" || s.Node == o.cfg.Node.ID() {
		return nil, errors.New("cascade: subscription from nowhere")
	}
	addr, err := resolve(s.Addr)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	rtt := time.Duration(s.RTTMS * float64(time.Millisecond))
	want := map[uint32]bool{}
	for _, id := range s.Streams {
		want[id] = true
	}
	var added, removed []*relayDown
	o.mu.Lock()
	for id := range want {
		st, ok := o.streams[id]
		if !ok || st.room != s.Room {
			continue
		}
		k := subKey{s.Node, id}
		r := o.subs[k]
		if r == nil {
			r = newRelayDown(o.cfg.Relay, st, id, addr, &o.resends)
			o.subs[k] = r
			added = append(added, r)
		}
		r.w.addr.Store(&addr)
		r.refreshed = now
		r.rtt.Store(int64(rtt))
	}
	for k, r := range o.subs {
		if k.node == s.Node && r.room == s.Room && !want[k.stream] {
			delete(o.subs, k)
			removed = append(removed, r)
		}
	}
	o.keep[bridgeKey{s.Room, s.Node}] = kept{encs: s.Keep, at: now}
	demand := o.demandLocked(s.Room, s.Node)
	o.mu.Unlock()
	for _, r := range removed {
		r.up.RemoveDown(r.d)
	}
	for _, r := range added {
		r.up.AddDown(r.d)
		r.up.RequestKeyframe(now)
	}
	o.tellRoom(s.Room, s.Node, demand)
	return json.Marshal(subscribeReply{Sender: o.cfg.Relay.Keyring().Sender()})
}

// demandLocked is what node receives of room, by source and encoding, and
// whether it changed since last told; nil: unchanged.
func (o *origin) demandLocked(room, node string) map[string][]bool {
	d := map[string][]bool{}
	for k, r := range o.subs {
		if k.node != node || r.room != room || r.up.Kind() != webrtc.RTPCodecTypeVideo {
			continue
		}
		e := r.up.Encoding()
		encs := d[r.up.Source()]
		for len(encs) <= e {
			encs = append(encs, false)
		}
		encs[e] = true
		d[r.up.Source()] = encs
	}
	for source, encs := range o.keep[bridgeKey{room, node}].encs {
		mark := d[source]
		for len(mark) < len(encs) {
			mark = append(mark, false)
		}
		for i, on := range encs {
			mark[i] = mark[i] || on
		}
		d[source] = mark
	}
	if o.demand[room] == nil {
		o.demand[room] = map[string]map[string][]bool{}
	}
	if prev, ok := o.demand[room][node]; ok && sameDemand(prev, d) {
		return nil
	}
	o.demand[room][node] = d
	return d
}

func sameDemand(a, b map[string][]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k, x := range a {
		y, ok := b[k]
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if x[i] != y[i] {
				return false
			}
		}
	}
	return true
}

func (o *origin) tellRoom(room, node string, demand map[string][]bool) {
	if demand == nil {
		return
	}
	if rm, ok := o.cfg.Hub.Room(room); ok {
		if len(demand) == 0 {
			demand = nil
		}
		rm.SetRemoteDemand(node, demand)
	}
}

// expire ends subscriptions not refreshed in time (their bridge died or left
// the room) and forgets what they asked kept on.
func (o *origin) expire(now time.Time) {
	type told struct {
		room, node string
		demand     map[string][]bool
	}
	var removed []*relayDown
	stale := map[bridgeKey]bool{}
	o.mu.Lock()
	for k, r := range o.subs {
		if now.Sub(r.refreshed) > subscribeTTL {
			delete(o.subs, k)
			removed = append(removed, r)
			stale[bridgeKey{r.room, k.node}] = true
		}
	}
	for k, kp := range o.keep {
		if now.Sub(kp.at) > subscribeTTL {
			delete(o.keep, k)
			stale[k] = true
		}
	}
	var tell []told
	for k := range stale {
		tell = append(tell, told{room: k.room, node: k.node, demand: o.demandLocked(k.room, k.node)})
	}
	o.mu.Unlock()
	for _, r := range removed {
		r.up.RemoveDown(r.d)
	}
	for _, t := range tell {
		o.tellRoom(t.room, t.node, t.demand)
	}
}

// retain forgets the streams of room that are not in live (nil: the room
// ended here), and ends their subscriptions.
func (o *origin) retain(room string, live map[*forward.UpTrack]bool) {
	var removed []*relayDown
	o.mu.Lock()
	for id, st := range o.streams {
		if st.room == room && !live[st.up] {
			delete(o.streams, id)
			delete(o.ids, st.up)
		}
	}
	for k, r := range o.subs {
		if r.room == room && !live[r.up] {
			delete(o.subs, k)
			removed = append(removed, r)
		}
	}
	if live == nil {
		delete(o.demand, room)
	}
	o.mu.Unlock()
	for _, r := range removed {
		r.up.RemoveDown(r.d)
	}
}

// rooms are the rooms with streams known here.
func (o *origin) rooms() map[string]bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := map[string]bool{}
	for _, st := range o.streams {
		out[st.room] = true
	}
	return out
}

func (o *origin) close() {
	o.mu.Lock()
	subs := o.subs
	o.subs = map[subKey]*relayDown{}
	o.mu.Unlock()
	for _, r := range subs {
		r.up.RemoveDown(r.d)
	}
}

// feedback handles a keyframe request or NACKs from a subscriber (on the
// relay's reader goroutine).
func (o *origin) feedback(now time.Time, sender uint32, stream uint32, body []byte) {
	if relay.ParseFeedback(body, &o.fb) != nil {
		return
	}
	node, ok := o.cfg.Relay.Peers().Node(sender)
	if !ok {
		return
	}
	o.mu.Lock()
	st, known := o.streams[stream]
	r := o.subs[subKey{node, stream}]
	o.mu.Unlock()
	switch o.fb.Type {
	case relay.FeedbackKeyframe:
		// Any bridge may ask: it may be about to subscribe.
		if known {
			st.up.Stats().ReceiverKeyframes.Add(1)
			st.up.RequestKeyframe(now)
		}
	case relay.FeedbackNACK:
		o.nack = rtcp.TransportLayerNack{Nacks: o.nack.Nacks[:0]}
		for _, p := range o.fb.NACKs {
			o.seqs = p.AppendLost(o.seqs[:0])
			for _, seq := range o.seqs {
				o.resend(now, r, seq)
			}
		}
		if len(o.nack.Nacks) > 0 {
			o.nack.MediaSSRC = r.w.ssrc
			r.d.HandleRTCP(now, []rtcp.Packet{&o.nack})
		}
	}
}

// resend answers one NACKed sequence number of r (nil: not subscribed):
// audio from its store at once, video added to o.nack for its DownTrack.
func (o *origin) resend(now time.Time, r *relayDown, seq uint16) {
	c := &o.resends
	c.asked.Add(1)
	switch {
	case r == nil:
		c.unsubscribed.Add(1)
	case !r.allowResend(now, seq):
		c.oneRTT.Add(1)
	case r.w.store == nil:
		o.nack.Nacks = append(o.nack.Nacks, rtcp.NackPair{PacketID: seq})
	default:
		n, ok := r.w.store.get(seq, o.audio[:])
		if !ok {
			c.unavailable.Add(1)
			return
		}
		if r.w.t.Send(now, *r.w.addr.Load(), relay.KindMedia, r.w.stream, o.audio[:n]) == nil {
			c.audio.Add(1)
		}
	}
}

func resolve(hostport string) (netip.AddrPort, error) {
	if ap, err := netip.ParseAddrPort(hostport); err == nil {
		return ap, nil
	}
	a, err := net.ResolveUDPAddr("udp", hostport)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("cascade: relay address %q: %w", hostport, err)
	}
	return a.AddrPort(), nil
}

// relayWriter is the writer of a relayed DownTrack: each RTP packet, sealed
// into one datagram to the subscriber. Called under the DownTrack's lock
// (one writer at a time), so its scratch needs none.
type relayWriter struct {
	t      *relay.Transport
	addr   atomic.Pointer[netip.AddrPort]
	stream uint32
	ssrc   uint32
	levels *forward.LevelRing // audio: the source's levels, sent along
	store  *audioStore        // audio: what was sent, for NACKs
	counts *resendCounters
	hdr    rtp.Header
	exts   []rtp.Extension // hdr's, with a backing of its own
	ext    [1]byte
	buf    [relay.MaxBody]byte
	silent atomic.Uint64 // audio packets not relayed: the source is silent
	gaps   silenceGaps
	// Video: the highest sequence number written.
	highest uint16
	wrote   bool
}

// audioLevelExt is the extension id the relay carries audio levels in.
const audioLevelExt = 1

// silence is RFC 6464's level of digital silence (-127 dBov): such audio is
// not relayed (audio of non-silent participants only).
const silence = 127

func (w *relayWriter) WriteRTP(h *rtp.Header, payload []byte) (int, error) {
	now := time.Now()
	w.hdr = *h
	w.hdr.Extension, w.hdr.Extensions = false, w.exts[:0]
	if w.levels != nil {
		if l, ok := w.levels.Latest(); ok && now.Sub(l.At) < 100*time.Millisecond {
			if l.Raw >= silence {
				w.silent.Add(1)
				w.gaps.skip(h.SequenceNumber)
				return len(payload), nil
			}
			w.ext[0] = l.Raw
			_ = w.hdr.SetExtension(audioLevelExt, w.ext[:])
			w.exts = w.hdr.Extensions
		}
		seq, ok := w.gaps.number(h.SequenceNumber)
		if !ok {
			return len(payload), nil
		}
		w.hdr.SequenceNumber = seq
	}
	n, err := w.hdr.MarshalTo(w.buf[:])
	if err != nil {
		return 0, err
	}
	if n+len(payload) > len(w.buf) {
		return 0, relay.ErrLong
	}
	n += copy(w.buf[n:], payload)
	if w.store != nil {
		w.store.keep(w.hdr.SequenceNumber, w.buf[:n], now)
	} else if w.wrote && int16(w.hdr.SequenceNumber-w.highest) <= 0 {
		w.counts.videoLate.Add(1)
	} else {
		w.highest, w.wrote = w.hdr.SequenceNumber, true
	}
	addr := w.addr.Load()
	if err := w.t.Send(now, *addr, relay.KindMedia, w.stream, w.buf[:n]); err != nil {
		return 0, err
	}
	return len(payload), nil
}

func (w *relayWriter) Write(b []byte) (int, error) {
	return 0, errors.New("cascade: raw writes are not relayed")
}

// writeRTCP relays the DownTrack's sender reports (about one a second).
func (w *relayWriter) writeRTCP(pkts []rtcp.Packet) error {
	b, err := rtcp.Marshal(pkts)
	if err != nil {
		return err
	}
	return w.t.Send(time.Now(), *w.addr.Load(), relay.KindReport, w.stream, b)
}

// bindContext binds a relayed DownTrack as a receiver's answer would.
type bindContext struct {
	codec webrtc.RTPCodecParameters
	ssrc  uint32
	w     *relayWriter
}

func (b bindContext) CodecParameters() []webrtc.RTPCodecParameters {
	return []webrtc.RTPCodecParameters{b.codec}
}
func (b bindContext) HeaderExtensions() []webrtc.RTPHeaderExtensionParameter { return nil }
func (b bindContext) SSRC() webrtc.SSRC                                      { return webrtc.SSRC(b.ssrc) }
func (b bindContext) SSRCRetransmission() webrtc.SSRC                        { return 0 }
func (b bindContext) SSRCForwardErrorCorrection() webrtc.SSRC                { return 0 }
func (b bindContext) WriteStream() webrtc.TrackLocalWriter                   { return b.w }
func (b bindContext) ID() string                                             { return "relay" }
func (b bindContext) RTCPReader() interceptor.RTCPReader                     { return nil }

func newRelayDown(t *relay.Transport, st outStream, stream uint32, addr netip.AddrPort, counts *resendCounters) *relayDown {
	// The stream id is the SSRC too: the subscriber's track knows its sender
	// reports by it.
	w := &relayWriter{t: t, stream: stream, ssrc: stream, counts: counts}
	w.addr.Store(&addr)
	if st.up.Kind() == webrtc.RTPCodecTypeAudio {
		w.store = newAudioStore()
		if st.up.AudioLevelExtID() != 0 {
			w.levels = st.up.Levels()
		}
	}
	d := forward.NewDownTrack(st.up, "relay")
	pt := webrtc.PayloadType(96)
	if st.up.Kind() == webrtc.RTPCodecTypeAudio {
		pt = 111
	}
	_, _ = d.Bind(bindContext{codec: webrtc.RTPCodecParameters{RTPCodecCapability: st.up.Codec(), PayloadType: pt}, ssrc: w.ssrc, w: w})
	d.SetRTCPWriter(w.writeRTCP)
	return &relayDown{room: st.room, stream: stream, up: st.up, d: d, w: w}
}
