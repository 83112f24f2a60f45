package cascade

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/podium-sfu/podium/internal/packetcache"
)

// The origin's half of repair on the relay hop. Video NACKs go to the
// relayed DownTrack, which answers from the source's packet store. An audio
// DownTrack keeps no store (receivers' Opus does not NACK), so each relayed
// audio stream keeps the packets it sent, as sent (numbered and with their
// level), and answers from them.

// Resends count the sequence numbers other bridges NACKed here, and what
// came of them.
type Resends struct {
	Asked        uint64 // sequence numbers NACKed
	OneRTT       uint64 // not resent: resent less than a round trip before (thesis 8.3.4)
	Unsubscribed uint64 // not resent: the stream is not relayed to that bridge
	Unavailable  uint64 // audio, not resent: no longer (or never) in the store
	Audio        uint64 // audio packets resent
	VideoLate    uint64 // video packets sent below the highest sent: resent, or late from the source
}

type resendCounters struct {
	asked, oneRTT, unsubscribed, unavailable, audio, videoLate atomic.Uint64
}

func (c *resendCounters) load() Resends {
	return Resends{Asked: c.asked.Load(), OneRTT: c.oneRTT.Load(), Unsubscribed: c.unsubscribed.Load(),
		Unavailable: c.unavailable.Load(), Audio: c.audio.Load(), VideoLate: c.videoLate.Load()}
}

// The audio store of one relayed stream: 128 packets are 2.5 s of 20 ms
// Opus (more with DTX), beyond any retry (nackTries round trips); a slot
// holds an Opus packet of up to 480 bytes with its header (192 kb/s), and a
// larger one is not kept.
const (
	audioStoreSlots = 128
	audioSlotSize   = 512
)

// audioStore is what a relayed audio stream sent: its writer keeps, the
// relay reader copies out for a resend; mu is held only to copy.
type audioStore struct {
	mu    sync.Mutex
	cache *packetcache.Cache
}

func newAudioStore() *audioStore {
	c, _ := packetcache.New(audioStoreSlots, audioSlotSize) // constant, valid arguments
	return &audioStore{cache: c}
}

func (s *audioStore) keep(seq uint16, pkt []byte, now time.Time) {
	s.mu.Lock()
	_ = s.cache.Store(seq, pkt, now) // too large or too old: not resendable
	s.mu.Unlock()
}

// get copies packet seq into dst (audioSlotSize bytes); ok is false when it
// is not kept.
func (s *audioStore) get(seq uint16, dst []byte) (n int, ok bool) {
	s.mu.Lock()
	n, _, ok = s.cache.Get(seq, dst)
	s.mu.Unlock()
	return n, ok
}

// silenceGaps numbers a relayed audio stream down by the silent packets not
// relayed, so that the subscriber sees a gap only where the relay hop lost
// a packet (its timestamps jump as in DTX).
type silenceGaps struct {
	skipped  uint16
	lastSkip uint16 // the newest silent packet's own number
}

// skip notes that packet seq is not relayed.
func (g *silenceGaps) skip(seq uint16) {
	g.skipped++
	g.lastSkip = seq
}

// number is what packet seq is relayed as; ok is false for a packet from
// before the newest skipped one (late): its number went to a later packet.
func (g *silenceGaps) number(seq uint16) (out uint16, ok bool) {
	if g.skipped == 0 {
		return seq, true
	}
	switch d := int16(seq - g.lastSkip); {
	case d < 0:
		return 0, false
	case d > lateSpan:
		// Kept within reach, so that int16 still tells late from new
		// after half the numbering has gone by.
		g.lastSkip = seq - lateSpan
	}
	return seq - g.skipped, true
}

// lateSpan is how far behind the newest a packet is late whatever it is.
const lateSpan = 1024
