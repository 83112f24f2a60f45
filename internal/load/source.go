package load

import (
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"time"

	"github.com/podium-sfu/podium/internal/clip"
	"github.com/podium-sfu/podium/internal/media"
	"github.com/podium-sfu/podium/internal/packetcache"
)

const (
	// audioStream is the audio's stream index for packetWriter; video encodings
	// are 0 (lowest) and up.
	audioStream = -1

	audioFrame     = 20 * time.Millisecond
	audioTSPerSlot = 960 // 20 ms at 48 kHz
	videoClockRate = 90000

	// maxPayload is the RTP payload of the largest video packet (libwebrtc keeps
	// packets near 1200 bytes so they survive tunnels).
	maxPayload = 1200
	// vp8DescriptorLen is our descriptor: X, I (15-bit picture id), L, T.
	vp8DescriptorLen = 6

	// dtxHangover is how many 20 ms frames Opus keeps sending after speech ends;
	// then DTX sends one frame per dtxInterval.
	dtxHangover = 10
	dtxInterval = 20 // frames: 400 ms

	// maxLate is how far behind schedule a stream may fall (a stalled process)
	// before it skips frames instead of bursting them.
	maxLate = 200 * time.Millisecond

	videoCacheSlots = 256 // about a second of 720p
	cacheSlotSize   = 5 + maxPayload
)

// outPacket is one packet for packetWriter; the publish connection adds SSRC,
// payload type and header extensions.
type outPacket struct {
	Seq     uint16
	TS      uint32
	Marker  bool
	Level   int // RFC 6464 level (audio), -1 for none
	Payload []byte
	// RTX marks a retransmission: sent on the repair stream (RFC 4588) where one
	// was negotiated, else again as the original.
	RTX bool
}

// packetWriter sends packets on the current publish connection.
type packetWriter interface {
	writeRTP(stream int, p *outPacket) error
}

// sourceConfig is what a participant publishes.
type sourceConfig struct {
	// Speech and Noise are the audio while speaking and while silent; nil Speech
	// means no audio.
	Speech, Noise *clip.Audio
	// DTX sends one silent frame per 400 ms after a 200 ms hangover, as Opus
	// discontinuous transmission does.
	DTX bool
	// Video has one clip per encoding, lowest first; RIDs names them for
	// simulcast (nil: a single encoding without RID).
	Video []*clip.Video
	RIDs  []string
}

// sourceStats are a source's counters, read by the reporter at any time.
type sourceStats struct {
	AudioPackets, AudioBytes atomic.Uint64
	VideoPackets, VideoBytes atomic.Uint64
	VideoFrames, Keyframes   atomic.Uint64
	KeyframeRequests         atomic.Uint64 // PLI/FIR received
	NACKed, Retransmitted    atomic.Uint64 // sequence numbers asked for / answered
	WriteErrors              atomic.Uint64
	Paused                   atomic.Bool // told to stop sending video
}

// sentAudio remembers when recent audio packets were sent, by RTP timestamp, so
// a receiver in the same process can measure end-to-end latency.
type sentAudio struct {
	ts [256]atomic.Uint32
	at [256]atomic.Int64
}

func (s *sentAudio) record(ts uint32, now time.Time) {
	i := (ts / audioTSPerSlot) & 255
	s.at[i].Store(now.UnixNano())
	s.ts[i].Store(ts)
}

// sentAt returns when the packet with timestamp ts was sent, if still known.
func (s *sentAudio) sentAt(ts uint32) (int64, bool) {
	i := (ts / audioTSPerSlot) & 255
	at := s.at[i].Load()
	if s.ts[i].Load() != ts || at == 0 {
		return 0, false
	}
	return at, true
}

// source is a participant's media as a state machine: tick(now) sends what is due
// (audio every 20 ms, each encoding's frames at the clip's rate), and the
// signaling and RTCP handlers change what is sent. It never reads the clock and
// has one owner (the sender loop), so it needs no lock.
type source struct {
	cfg      sourceConfig
	start    time.Time
	out      packetWriter // nil while no connection is up: time passes, nothing is sent
	speaking bool
	paused   bool
	audio    audioState
	video    []*videoState
	stats    sourceStats
	sent     sentAudio
	scratch  []byte
}

type audioState struct {
	slot       int64 // next 20 ms slot to send
	tsBase     uint32
	seq        uint16
	speechPos  int
	noisePos   int
	silent     int // frames since speech stopped
	talkspurt  bool
	hadSpeaker bool
}

type videoState struct {
	clip      *clip.Video
	rid       string
	active    bool // the SFU wants this encoding (layers)
	slot      int64
	tsBase    uint32
	tsPerSlot uint32
	pos       int // next clip frame
	seq       uint16
	pictureID uint16
	tl0       uint8
	forceKey  bool // jump to the next keyframe before the next frame
	cache     *packetcache.Cache
	resend    []byte
}

func newSource(cfg sourceConfig, start time.Time, rng *rand.Rand) *source {
	s := &source{cfg: cfg, start: start, scratch: make([]byte, maxPayload+2)}
	s.audio = audioState{tsBase: rng.Uint32(), seq: uint16(rng.Uint32()), speechPos: rng.IntN(1 << 16), noisePos: rng.IntN(1 << 16)}
	for i, c := range cfg.Video {
		v := &videoState{
			clip: c, active: true,
			tsBase: rng.Uint32(), seq: uint16(rng.Uint32()),
			pictureID: uint16(rng.Uint32()) & 0x7fff, tl0: uint8(rng.Uint32()),
			tsPerSlot: uint32(c.FrameDuration.Seconds()*videoClockRate + 0.5),
			resend:    make([]byte, cacheSlotSize),
		}
		v.cache, _ = packetcache.New(videoCacheSlots, cacheSlotSize) // constant, valid arguments
		if i < len(cfg.RIDs) {
			v.rid = cfg.RIDs[i]
		}
		s.video = append(s.video, v)
	}
	return s
}

// bind starts sending on a new connection (nil: none). Each encoding starts with
// a keyframe, as an encoder does for a new peer connection.
func (s *source) bind(out packetWriter) {
	s.out = out
	for _, v := range s.video {
		v.forceKey = true
	}
	s.audio.talkspurt = true
}

// next is when tick has something to do.
func (s *source) next() time.Time {
	var t time.Time
	if s.cfg.Speech != nil {
		t = s.slotTime(s.audio.slot, audioFrame)
	}
	for _, v := range s.video {
		if vt := s.slotTime(v.slot, v.clip.FrameDuration); t.IsZero() || vt.Before(t) {
			t = vt
		}
	}
	return t
}

func (s *source) slotTime(slot int64, d time.Duration) time.Time {
	return s.start.Add(time.Duration(slot) * d)
}

// due returns the slots due at now, starting from *slot, and advances it; a
// stream far behind skips ahead instead of bursting.
func (s *source) due(slot *int64, d time.Duration, now time.Time) (first, n int64) {
	current := int64(now.Sub(s.start) / d) // the slot now falls in
	if current < *slot {
		return *slot, 0
	}
	if time.Duration(current-*slot)*d > maxLate {
		*slot = current
	}
	first, n = *slot, current-*slot+1
	*slot = current + 1
	return first, n
}

// tick sends everything due at now.
func (s *source) tick(now time.Time) {
	if s.cfg.Speech != nil {
		first, n := s.due(&s.audio.slot, audioFrame, now)
		for k := first; k < first+n; k++ {
			s.sendAudio(k, now)
		}
	}
	for i, v := range s.video {
		first, n := s.due(&v.slot, v.clip.FrameDuration, now)
		for k := first; k < first+n; k++ {
			if v.active && !s.paused {
				s.sendFrame(i, v, k, now)
			}
		}
	}
}

func (s *source) sendAudio(slot int64, now time.Time) {
	a := &s.audio
	clipOf, pos := s.cfg.Noise, &a.noisePos
	if s.speaking {
		clipOf, pos = s.cfg.Speech, &a.speechPos
		if a.silent > 0 || !a.hadSpeaker {
			a.talkspurt = true
		}
		a.silent, a.hadSpeaker = 0, true
	} else {
		a.silent++
	}
	if clipOf == nil {
		clipOf = s.cfg.Speech
	}
	i := *pos % len(clipOf.Packets)
	*pos = i + 1
	if s.cfg.DTX && !s.speaking && a.silent > dtxHangover && (a.silent-dtxHangover)%dtxInterval != 0 {
		return // discontinuous transmission: nothing to send in this frame
	}
	p := outPacket{
		Seq: a.seq, TS: a.tsBase + uint32(slot)*audioTSPerSlot, Marker: a.talkspurt,
		Level: int(clipOf.Level(i)), Payload: clipOf.Packets[i],
	}
	if !s.speaking {
		p.Level = int(max(clipOf.Level(i), 70)) // a muted-ish microphone: room noise at most
	}
	if s.out == nil {
		return
	}
	a.seq++
	a.talkspurt = false
	if err := s.out.writeRTP(audioStream, &p); err != nil {
		s.stats.WriteErrors.Add(1)
		return
	}
	s.sent.record(p.TS, now)
	s.stats.AudioPackets.Add(1)
	s.stats.AudioBytes.Add(uint64(len(p.Payload)))
}

// sendFrame packetizes the encoding's next clip frame: VP8 payload descriptor
// with picture id, TL0PICIDX and temporal layer, payloads split evenly below
// maxPayload, marker on the last packet; each packet is cached for NACKs.
func (s *source) sendFrame(enc int, v *videoState, slot int64, now time.Time) {
	if s.out == nil {
		return
	}
	if v.forceKey {
		v.pos = v.clip.NextKey(v.pos)
		v.forceKey = false
	}
	f := v.clip.Frames[v.pos]
	v.pos = (v.pos + 1) % len(v.clip.Frames)
	v.pictureID = (v.pictureID + 1) & 0x7fff
	if f.TID == 0 {
		v.tl0++
	}
	d := media.VP8Descriptor{
		Extended: true, HasPictureID: true, PictureIDBits: 15, PictureID: v.pictureID,
		HasTL0PICIDX: true, TL0PICIDX: v.tl0, HasTID: true, TID: f.TID, LayerSync: f.Sync,
		NonReference: f.TID == 2,
	}
	ts := v.tsBase + uint32(slot)*v.tsPerSlot
	chunk := maxPayload - vp8DescriptorLen
	n := (len(f.Data) + chunk - 1) / chunk
	size, extra := len(f.Data)/n, len(f.Data)%n
	data := f.Data
	for k := 0; k < n; k++ {
		l := size
		if k < extra {
			l++
		}
		d.Start = k == 0
		hl, _ := media.PutVP8Descriptor(s.scratch, &d) // scratch holds any descriptor
		payload := s.scratch[:hl+copy(s.scratch[hl:], data[:l])]
		data = data[l:]
		p := outPacket{Seq: v.seq, TS: ts, Marker: k == n-1, Level: -1, Payload: payload}
		v.seq++
		s.cache(v, &p, now)
		if err := s.out.writeRTP(enc, &p); err != nil {
			s.stats.WriteErrors.Add(1)
			continue
		}
		s.stats.VideoPackets.Add(1)
		s.stats.VideoBytes.Add(uint64(len(payload)))
	}
	s.stats.VideoFrames.Add(1)
	if f.Key {
		s.stats.Keyframes.Add(1)
	}
}

// cache keeps a sent packet as timestamp (4 bytes), marker (1), payload.
func (s *source) cache(v *videoState, p *outPacket, now time.Time) {
	var b [cacheSlotSize]byte
	binary.BigEndian.PutUint32(b[:], p.TS)
	if p.Marker {
		b[4] = 1
	}
	n := 5 + copy(b[5:], p.Payload)
	_ = v.cache.Store(p.Seq, b[:n], now) // only a straggler is refused
}

// keyframeRequest handles a PLI or FIR for an encoding: its next frame is the
// clip's next keyframe.
func (s *source) keyframeRequest(enc int) {
	s.stats.KeyframeRequests.Add(1)
	if enc >= 0 && enc < len(s.video) {
		s.video[enc].forceKey = true
	}
}

// resendWindow: a NACK for a packet (re)sent less than this ago is a duplicate.
const resendWindow = 5 * time.Millisecond

// nack answers a NACK for an encoding from the cache.
func (s *source) nack(enc int, seqs []uint16, now time.Time) {
	s.stats.NACKed.Add(uint64(len(seqs)))
	if enc < 0 || enc >= len(s.video) || s.out == nil {
		return
	}
	v := s.video[enc]
	for _, seq := range seqs {
		n, ok := v.cache.Resend(seq, v.resend, now, resendWindow, 0)
		if !ok || n < 5 {
			continue
		}
		p := outPacket{Seq: seq, TS: binary.BigEndian.Uint32(v.resend), Marker: v.resend[4] == 1, Level: -1, Payload: v.resend[5:n], RTX: true}
		if s.out.writeRTP(enc, &p) == nil {
			s.stats.Retransmitted.Add(1)
		}
	}
}

// setPaused turns all video off (pause-video) or on again (resume-video).
func (s *source) setPaused(paused bool) {
	if s.paused && !paused {
		for _, v := range s.video {
			v.forceKey = true
		}
	}
	s.paused = paused
	s.stats.Paused.Store(paused)
}

// setLayers keeps the listed simulcast encodings on and turns the others off; an
// encoding turned on starts with a keyframe.
func (s *source) setLayers(rids []string) {
	for _, v := range s.video {
		on := v.rid == "" || slices.Contains(rids, v.rid)
		if on && !v.active {
			v.forceKey = true
		}
		v.active = on
	}
}

// setSpeaking switches the audio between the speech and the noise clip.
func (s *source) setSpeaking(on bool) { s.speaking = on }

// activeRIDs lists the encodings being sent (tests, reports).
func (s *source) activeRIDs() []string {
	var out []string
	for _, v := range s.video {
		if v.active && !s.paused {
			out = append(out, v.rid)
		}
	}
	return out
}
