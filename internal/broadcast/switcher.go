package broadcast

import (
	"time"

	"github.com/pion/rtp"

	"github.com/podium-sfu/podium/internal/media"
)

// switcher makes one continuous RTP stream of sources taking turns, as a
// player with one track needs (pure: time is passed in). A switch to another
// source starts a new epoch: sequence numbers, timestamps and (VP8) picture
// ids and TL0PICIDX go on from where the last source left off, so the
// player's jitter buffer and decoder see one stream. Video switches only at a
// keyframe's first packet; audio (Opus) at any packet.
type switcher struct {
	video bool
	clock uint32 // RTP clock rate, Hz
	live  string // the source being forwarded ("": none yet)
	// want is the source to switch to: video, the room's stage; audio, the
	// dominant speaker. "" takes the first source that can start.
	want string

	started  bool
	seqOff   uint16
	tsOff    uint32
	pidOff   uint16
	tl0Off   uint8
	lastSeq  uint16
	lastTS   uint32
	lastPID  uint16
	lastTL0  uint8
	lastAt   time.Time
	vp8      media.VP8Descriptor // scratch
	switches int
}

// next decides whether a packet of source is forwarded; if so it rewrites h
// and, for VP8, the payload's descriptor in place.
func (s *switcher) next(now time.Time, source string, h *rtp.Header, payload []byte) bool {
	if source != s.live {
		if !s.canStart(source, payload) {
			return false
		}
		s.begin(now, h, payload)
		s.live = source
		s.switches++
	}
	h.SequenceNumber += s.seqOff
	h.Timestamp += s.tsOff
	if int16(h.SequenceNumber-s.lastSeq) > 0 || !s.started {
		s.lastSeq = h.SequenceNumber
	}
	if int32(h.Timestamp-s.lastTS) > 0 || !s.started {
		s.lastTS = h.Timestamp
	}
	s.started = true
	s.lastAt = now
	if s.video && media.ParseVP8(payload, &s.vp8) == nil {
		if s.vp8.HasPictureID {
			mask := uint16(1)<<s.vp8.PictureIDBits - 1
			pid := (s.vp8.PictureID + s.pidOff) & mask
			if media.SetVP8PictureID(payload, pid) == nil {
				s.lastPID = pid
			}
		}
		if s.vp8.HasTL0PICIDX {
			v := s.vp8.TL0PICIDX + s.tl0Off
			if media.SetVP8TL0PICIDX(payload, v) == nil {
				s.lastTL0 = v
			}
		}
	}
	return true
}

// canStart says whether source may take over: the wanted one, or while
// nothing is live any (video: the wanted one if known); video only at a
// keyframe's start.
func (s *switcher) canStart(source string, payload []byte) bool {
	switch {
	case s.live != "" && source != s.want:
		return false // only the wanted source takes over from a live one
	case s.live == "" && s.video && s.want != "" && source != s.want:
		return false // the stage is known: wait for it rather than flash another picture
	case !s.video:
		return true
	}
	return media.ParseVP8(payload, &s.vp8) == nil && s.vp8.Start && s.vp8.PartitionID == 0 && s.vp8.IsKeyframe()
}

// begin sets the offsets that continue the stream with h's packet: the next
// sequence number, and a timestamp advanced by the wall time since the last
// packet (at least one tick).
func (s *switcher) begin(now time.Time, h *rtp.Header, payload []byte) {
	if !s.started {
		return // the first source keeps its own numbering
	}
	s.seqOff = s.lastSeq + 1 - h.SequenceNumber
	gap := uint32(max(1, now.Sub(s.lastAt).Nanoseconds()*int64(s.clock)/int64(time.Second)))
	s.tsOff = s.lastTS + gap - h.Timestamp
	if !s.video || media.ParseVP8(payload, &s.vp8) != nil {
		return
	}
	if s.vp8.HasPictureID {
		s.pidOff = s.lastPID + 1 - s.vp8.PictureID
	}
	if s.vp8.HasTL0PICIDX {
		s.tl0Off = s.lastTL0 + 1 - s.vp8.TL0PICIDX
	}
}

// source maps a sequence number of the output back to the live source's,
// for NACKs (ok false before anything was forwarded).
func (s *switcher) source(seq uint16) (string, uint16, bool) {
	if !s.started {
		return "", 0, false
	}
	return s.live, seq - s.seqOff, true
}
