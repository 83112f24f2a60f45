package forward

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/media"
	"github.com/podium-sfu/podium/internal/packetcache"
	"github.com/podium-sfu/podium/internal/wire"
)

// KeyframeInterval is the shortest time between two keyframe requests we send to a
// sender: webrtc.org encoders produce at most one keyframe per 300 ms anyway, so
// requests from many receivers within that window are aggregated into one.
const KeyframeInterval = 300 * time.Millisecond

// UpTrackParams builds an UpTrack.
type UpTrackParams struct {
	Source string // publishing participant's id
	Kind   webrtc.RTPCodecType
	// SSRC and Codec describe the received stream (a webrtc.TrackRemote's SSRC and codec).
	SSRC  uint32
	Codec webrtc.RTPCodecCapability
	// Read reads the stream's next decrypted RTP packet into b (TrackRemote.Read);
	// an error ends Run.
	Read func(b []byte) (int, error)
	// SendKeyframeRequest asks the sender for a keyframe (a PLI on the publish connection).
	SendKeyframeRequest func(ssrc uint32) error
	// AudioLevelExtID is the negotiated id of the RFC 6464 header extension (0: none).
	AudioLevelExtID uint8
	// RID names the simulcast encoding ("" without simulcast); Encoding is its index,
	// 0 the lowest resolution.
	RID      string
	Encoding int
	// Meter, when set, counts this track's packets into server-wide totals.
	Meter *Meter
	// REDPayloadType is the payload type of the publisher's RED for Opus (0:
	// none negotiated), OpusPayloadType that of the Opus inside it: its RED
	// packets are forwarded as their primary Opus.
	REDPayloadType, OpusPayloadType uint8
}

// UpTrack is one stream received from a participant. One goroutine (Run) reads it and
// forwards each packet synchronously to the accepting DownTracks: no per-packet
// goroutine hand-off, and since writes copy into pion's SRTP buffer the received
// packet is never cloned.
type UpTrack struct {
	p     UpTrackParams
	ssrc  uint32
	downs atomic.Pointer[[]*DownTrack]
	mu    sync.Mutex // serializes changes to downs (copy-on-write)

	lastArrival         atomic.Int64  // unix nanos of the newest packet
	size                atomic.Uint32 // width<<16 | height from the newest keyframe
	rate                rateMeter
	temporalRate        [3]rateMeter    // video: by VP8 temporal layer (TID)
	settledRates        [3]atomic.Int64 // TemporalBitrates when last measured over a full window
	levels              LevelRing       // audio levels for the speaker detector
	sr                  srStore
	lastKeyframeRequest atomic.Int64 // unix nanos
	stats               TrackStats
	muted               atomic.Bool // an administrator muted the sender: drop everything

	// rx serializes the two ways a packet comes in — Run (pion's path: the
	// packets before the data plane took the stream, and repaired ones, which
	// pion unwraps from RTX) and Receive (the socket's reader) — and owns
	// what they share: the packet being forwarded and the receive log.
	rx   sync.Mutex
	pkt  Packet
	recv recvLog
	// onLoss is told when recv puts packets on its NACK list (OnLoss).
	onLoss atomic.Pointer[func()]

	// store holds the packets of this encoding that were forwarded, as
	// received, once for every destination (video; made at the first one):
	// DownTracks answer NACKs from it. storeMu is held only to copy a packet
	// in or out.
	storeMu sync.Mutex
	store   *packetcache.Cache

	red *redHistory // audio: the RED payloads of the packet being forwarded; rx owns it
}

// storeSlots is the retransmission history of one source stream: 512 packets
// is over 1 s of 720p video, more than any NACK round trip we answer.
const storeSlots = 512

// A source store starts at storeMinSlots and doubles (up to storeSlots) while
// it would overwrite packets younger than storeHorizon: 2 s covers the
// oldest packet answered (4 × RTT and queue, see Link.retransmitWindow) up to
// a 500 ms round trip. A 360p stream (70 packets/s) needs 256 slots, not 512:
// the stores were most of meeting-8's live heap.
const (
	storeMinSlots = 128
	storeHorizon  = 2 * time.Second
)

// storeSlotSize is a source store's slot until the stream sends a bigger
// packet (then packetcache.DefaultSlotSize): libwebrtc keeps a video packet
// within 1,200 bytes, header extensions included, and slots of 1,500 bytes
// for those left a fifth of every store empty.
const storeSlotSize = 1280

// fanoutBatch is the datagrams one received packet's fan-out sends in one
// system call: a bigger fan-out is sent in several.
const fanoutBatch = 32

// TrackStats are counters read by metrics and tests.
type TrackStats struct {
	Packets           atomic.Uint64
	Bytes             atomic.Uint64
	Malformed         atomic.Uint64
	KeyframeRequests  atomic.Uint64 // sent to the sender
	Keyframes         atomic.Uint64
	Forwarded         atomic.Uint64 // packet × destination
	NACKs             atomic.Uint64 // sequence numbers asked for by receivers
	Retransmissions   atomic.Uint64
	ReceiverKeyframes atomic.Uint64 // PLI/FIR received from receivers
	// Packets dropped on arrival, by reason (Malformed above is one more).
	DroppedPadding  atomic.Uint64 // padding-only packets (bandwidth probes): nothing to forward
	DroppedUnwanted atomic.Uint64 // a simulcast encoding nobody receives
	DroppedMuted    atomic.Uint64 // the sender is muted by an administrator
}

// NewUpTrack wraps a received track; call Run to start forwarding.
func NewUpTrack(p UpTrackParams) *UpTrack {
	u := &UpTrack{p: p, ssrc: p.SSRC, recv: newRecvLog(p.Codec.ClockRate, hasNACK(p.Codec.RTCPFeedback))}
	u.downs.Store(&[]*DownTrack{})
	if p.Kind == webrtc.RTPCodecTypeAudio {
		u.red = newREDHistory()
	}
	return u
}

// Source is the publishing participant's id.
func (u *UpTrack) Source() string { return u.p.Source }

// Kind is audio or video.
func (u *UpTrack) Kind() webrtc.RTPCodecType { return u.p.Kind }

// Codec is the negotiated codec of the received stream.
func (u *UpTrack) Codec() webrtc.RTPCodecCapability { return u.p.Codec }

// Levels are the audio levels read from the RFC 6464 extension (empty for video).
func (u *UpTrack) Levels() *LevelRing { return &u.levels }

// Stats exposes the track's counters.
func (u *UpTrack) Stats() *TrackStats { return &u.stats }

// SetMuted makes the track drop (on) or forward (off) everything it receives: an
// administrator's mute, enforced whatever the sender's client does.
func (u *UpTrack) SetMuted(on bool) { u.muted.Store(on) }

// Muted reports SetMuted's state.
func (u *UpTrack) Muted() bool { return u.muted.Load() }

// AddDown starts forwarding to d. A new video destination waits for a keyframe,
// which its first packets ask the sender for.
func (u *UpTrack) AddDown(d *DownTrack) {
	u.mu.Lock()
	old := *u.downs.Load()
	next := make([]*DownTrack, len(old), len(old)+1)
	copy(next, old)
	next = append(next, d)
	u.downs.Store(&next)
	u.mu.Unlock()
}

// RemoveDown stops forwarding to d.
func (u *UpTrack) RemoveDown(d *DownTrack) {
	u.mu.Lock()
	defer u.mu.Unlock()
	old := *u.downs.Load()
	next := make([]*DownTrack, 0, len(old))
	for _, x := range old {
		if x != d {
			next = append(next, x)
		}
	}
	u.downs.Store(&next)
}

// Downs is a snapshot of the current destinations.
func (u *UpTrack) Downs() []*DownTrack { return *u.downs.Load() }

// RequestKeyframe asks the sender for a keyframe unless one was asked for within
// KeyframeInterval. It reports whether a request was sent.
func (u *UpTrack) RequestKeyframe(now time.Time) bool {
	if u.p.Kind != webrtc.RTPCodecTypeVideo || u.p.SendKeyframeRequest == nil {
		return false
	}
	t := now.UnixNano()
	last := u.lastKeyframeRequest.Load()
	if t-last < int64(KeyframeInterval) || !u.lastKeyframeRequest.CompareAndSwap(last, t) {
		return false
	}
	if err := u.p.SendKeyframeRequest(u.ssrc); err != nil {
		return false
	}
	u.stats.KeyframeRequests.Add(1)
	return true
}

// Run reads and forwards until the track ends (its connection closed or the sender
// removed it).
func (u *UpTrack) Run() {
	buf := make([]byte, 1500)
	for {
		n, err := u.p.Read(buf)
		if err != nil {
			return
		}
		out := runBatches.Get().(*wire.Batch)
		out.Stats, out.Sampler = nil, nil // Receive sets this track's
		u.Receive(time.Now(), buf[:n], out)
		runBatches.Put(out) // flushed: Run's batches are never Held
	}
}

// runBatches lend Run a send batch for each packet pion reads. Once the data
// plane reads the socket, pion's path carries a track's first packets and its
// repairs only, and a batch of its own (48 kB) per track had been the largest
// part of what a track cost in memory.
var runBatches = sync.Pool{New: func() any { return wire.NewBatch(fanoutBatch) }}

// Receive forwards one decrypted packet of the stream, which arrived at now,
// sending in out (flushed before it returns). Run calls it for what pion
// reads; the data plane's socket reader for what it took (wire.RTPHandler).
func (u *UpTrack) Receive(now time.Time, raw []byte, out *wire.Batch) {
	if out.Stats == nil && u.p.Meter != nil {
		out.Stats = &u.p.Meter.Wire // the socket reader's batch, on its goroutine
		out.Sampler = u.p.Meter
	}
	u.rx.Lock()
	if u.parse(now, raw, &u.pkt, u.p.Kind == webrtc.RTPCodecTypeVideo) {
		u.forward(&u.pkt, out)
	}
	u.rx.Unlock()
}

// parse fills pkt from raw, which arrived at now; it reports false (and
// counts) for packets to drop.
func (u *UpTrack) parse(now time.Time, raw []byte, pkt *Packet, video bool) bool {
	u.stats.Packets.Add(1)
	u.stats.Bytes.Add(uint64(len(raw)))
	if u.p.Meter != nil {
		u.p.Meter.received(len(raw))
	}
	if err := media.ParseRTPHeader(raw, &pkt.Header); err != nil {
		u.stats.Malformed.Add(1)
		return false
	}
	if u.recv.add(now, pkt.Header.SequenceNumber, pkt.Header.Timestamp) {
		if f := u.onLoss.Load(); f != nil {
			(*f)()
		}
	}
	pkt.Buf = raw
	pkt.Payload = raw[pkt.Header.PayloadOffset:pkt.Header.PayloadEnd]
	if len(pkt.Payload) == 0 { // padding-only probe: nothing to forward
		u.stats.DroppedPadding.Add(1)
		return false
	}
	pkt.Arrival = now
	u.lastArrival.Store(pkt.Arrival.UnixNano())
	u.rate.add(pkt.Arrival, len(raw))
	if u.muted.Load() {
		u.stats.DroppedMuted.Add(1)
		return false
	}
	pkt.Encoding = u.p.Encoding
	pkt.From = u
	pkt.Keyframe = false
	if video {
		// Nobody forwards this encoding: drop it before any codec work.
		if !u.wanted() {
			u.stats.DroppedUnwanted.Add(1)
			return false
		}
		if media.ParseVP8(pkt.Payload, &pkt.VP8) != nil {
			u.stats.Malformed.Add(1)
			return false
		}
		u.temporalRate[min(pkt.VP8.TID, 2)].add(pkt.Arrival, len(raw))
		pkt.Keyframe = pkt.VP8.IsKeyframe()
		if pkt.Keyframe {
			if w, h, ok := media.VP8KeyframeSize(pkt.Payload, &pkt.VP8); ok {
				u.size.Store(uint32(w)<<16 | uint32(h))
			}
		}
	}
	if !video && !u.addAudio(pkt) {
		u.stats.Malformed.Add(1)
		return false
	}
	if !video && u.p.AudioLevelExtID != 0 {
		// No level in a packet is no observation: the detector counts gaps as silence.
		if ext, ok := media.FindExtension(raw, &pkt.Header, u.p.AudioLevelExtID); ok {
			if level, _, ok := media.AudioLevel(ext); ok {
				u.levels.push(pkt.Arrival, level)
			}
		}
	}
	if pkt.Keyframe {
		u.stats.Keyframes.Add(1)
	}
	return true
}

// forward is the selective-forwarding step (thesis Algorithm 1): each destination
// decides with accept, which never modifies the packet.
func (u *UpTrack) forward(pkt *Packet, out *wire.Batch) {
	var askKeyframe *UpTrack
	var onWire time.Time
	timed := false
	if u.p.Meter != nil {
		onWire, timed = u.p.Meter.sampleStart(pkt.Header.SSRC, pkt.Header.SequenceNumber)
	}
	sent, accepted := 0, 0
	downs := *u.downs.Load()
	for i, d := range downs {
		// Ask for the next destinations' state while this one is written:
		// their lines are cold by now, and a miss would stall the write.
		prefetchAhead(downs, i)
		if !d.accept(pkt) {
			continue
		}
		accepted++
		if out.Free() == 0 {
			out.Flush() // no lock held here
		}
		queued := out.Len()
		ok, ask := d.write(pkt, out)
		if ok {
			sent++
			// Sampled when the send is handed to the kernel: pion's at once,
			// ours when the batch carrying it is flushed.
			switch {
			case timed && out.Len() > queued:
				out.Timed(onWire, pkt.Arrival)
			case timed:
				u.p.Meter.Sent(onWire, pkt.Arrival, time.Now())
			}
		}
		if ask != nil {
			askKeyframe = ask
		}
	}
	// The packets of a frame read together leave together, each receiver's
	// as one GSO train; the end of a frame, or of the read, sends.
	frameGoesOn := out.Held && u.p.Kind == webrtc.RTPCodecTypeVideo && !pkt.Header.Marker
	if out.Len() > 0 && !frameGoesOn {
		out.Flush()
	}
	// Kept when some destination took it, sent or not: one whose send failed
	// (its path not ready yet) has the packet in its sequence space and will
	// ask for it again.
	if accepted > 0 && u.p.Kind == webrtc.RTPCodecTypeVideo {
		u.keep(pkt)
	}
	if accepted > 0 {
		u.tapped(pkt)
	}
	if sent > 0 {
		u.stats.Forwarded.Add(uint64(sent))
		if u.p.Meter != nil {
			u.p.Meter.forwarded(sent, len(pkt.Payload))
		}
	}
	// Asked outside the destinations' locks; RequestKeyframe aggregates requests.
	if askKeyframe != nil {
		askKeyframe.RequestKeyframe(pkt.Arrival)
	}
}

// keep stores a forwarded packet for retransmissions.
func (u *UpTrack) keep(pkt *Packet) {
	u.storeMu.Lock()
	if u.store == nil {
		u.store, _ = packetcache.New(storeMinSlots, storeSlotSize) // constant, valid arguments
	} else if len(pkt.Buf) > u.store.SlotSize() && u.store.SlotSize() < packetcache.DefaultSlotSize {
		u.store, _ = u.store.Resize(u.store.Capacity(), packetcache.DefaultSlotSize) // valid: the capacity is the store's
	} else if at, ok := u.store.Evicts(pkt.Header.SequenceNumber); ok && u.store.Capacity() < storeSlots && pkt.Arrival.Sub(at) < storeHorizon {
		u.store = u.store.Grow()
	}
	_ = u.store.Store(pkt.Header.SequenceNumber, pkt.Buf, pkt.Arrival)
	u.storeMu.Unlock()
}

// stored copies the kept packet seq into dst; ok is false when it is no
// longer (or never was) kept.
func (u *UpTrack) stored(seq uint16, dst []byte) (n int, ok bool) {
	u.storeMu.Lock()
	defer u.storeMu.Unlock()
	if u.store == nil {
		return 0, false
	}
	n, _, ok = u.store.Get(seq, dst)
	return n, ok
}

// wanted reports whether some destination accepts this encoding now.
func (u *UpTrack) wanted() bool {
	bit := uint32(1) << u.p.Encoding
	for _, d := range *u.downs.Load() {
		if d.accepts.Load()&bit != 0 {
			return true
		}
	}
	return false
}

// Encoding is the simulcast encoding index (0 = lowest; 0 without simulcast).
func (u *UpTrack) Encoding() int { return u.p.Encoding }

// RID is the simulcast encoding's name ("" without simulcast).
func (u *UpTrack) RID() string { return u.p.RID }

// Active reports whether a packet arrived within window before now.
func (u *UpTrack) Active(now time.Time, window time.Duration) bool {
	return now.UnixNano()-u.lastArrival.Load() < int64(window)
}

// Size is the frame size of the newest keyframe (0, 0 before the first).
func (u *UpTrack) Size() (width, height int) {
	v := u.size.Load()
	return int(v >> 16), int(v & 0xffff)
}

// Bitrate is the received bitrate over the last two seconds, in bits per second.
func (u *UpTrack) Bitrate(now time.Time) int { return u.rate.bitrate(now) }

// nominalTemporalShare is the usual share of an L1T3 stream's rate up to each
// temporal layer, used while the layers are not measured.
var nominalTemporalShare = [3]float64{0.4, 0.6, 1}

// TemporalBitrates are the rates of forwarding temporal layers 0..t (cumulative)
// for t = 0, 1, 2, in bits per second. Temporal layers are measured only while
// someone receives the encoding (others are dropped before parsing); until then
// the total is split in the usual L1T3 proportions. A stream without temporal
// layers has everything in layer 0.
//
// An encoding that stopped, or resumed less than a window ago, reports at least
// the rates it had when last measured over a full window: a resumed encoding's
// first moments are its keyframe or nothing at all, and the allocator must not
// take that for what it will cost (measured: a 720p encoding switched back on
// counted at the nominal 2.5 Mb/s instead of its 0.86 Mb/s, which held a video
// the receiver had just enlarged at 360p for a whole dwell).
func (u *UpTrack) TemporalBitrates(now time.Time) [3]int {
	tl := u.measuredTemporal(now)
	if u.rate.settled(now) {
		for i, r := range tl {
			u.settledRates[i].Store(int64(r))
		}
		return tl
	}
	for i := range tl {
		tl[i] = max(tl[i], int(u.settledRates[i].Load()))
	}
	return tl
}

// measuredTemporal splits the encoding's rate by temporal layer. The layers are
// measured only once someone has received the encoding for a whole window:
// before that their few buckets hold the switch's keyframe, and the spike
// undid upgrades at their first allocation (seen in CI after a cap was lifted).
func (u *UpTrack) measuredTemporal(now time.Time) [3]int {
	total := u.rate.bitrate(now)
	var tl [3]int
	sum := 0
	for i := range tl {
		sum += u.temporalRate[i].bitrate(now)
		tl[i] = sum
	}
	if u.temporalRate[0].settled(now) && sum*2 >= total && sum > 0 {
		return tl
	}
	for i := range tl {
		tl[i] = int(nominalTemporalShare[i] * float64(total))
	}
	return tl
}
