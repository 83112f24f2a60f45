package latency

import (
	"encoding/binary"
	"sync/atomic"
	"time"

	"github.com/podium-sfu/podium/internal/media"
)

// StampEvery is the sampling interval of Stamps: packets whose RTP sequence
// number is a multiple of it are stamped.
const StampEvery = 16

const stampSlots = 4096 // a power of two

// Stamps remembers when sampled RTP packets came off the network, keyed by SSRC
// and sequence number, which SRTP leaves in the clear. The socket reader calls
// Observe on every datagram; whoever later handles the decrypted packet asks
// Arrival. A fixed table of atomics: no lock, no allocation; an entry is
// overwritten by a later packet that hashes to the same slot.
type Stamps struct {
	slots [stampSlots]stamp
}

type stamp struct {
	key atomic.Uint64 // ssrc<<16 | seq, plus 1<<48 so that 0 means empty
	at  atomic.Int64  // unix nanos
}

func stampKey(ssrc uint32, seq uint16) uint64 { return 1<<48 | uint64(ssrc)<<16 | uint64(seq) }

func stampSlot(ssrc uint32, seq uint16) int {
	return int((ssrc*0x9E3779B1)^uint32(seq/StampEvery)) & (stampSlots - 1)
}

// Sampled reports whether packets with this sequence number are stamped.
func Sampled(seq uint16) bool { return seq%StampEvery == 0 }

// Observe stamps datagram b with now if it is a sampled RTP packet (not RTCP,
// STUN or DTLS).
func (s *Stamps) Observe(b []byte, now time.Time) {
	if !media.IsRTP(b) {
		return
	}
	seq := binary.BigEndian.Uint16(b[2:])
	if !Sampled(seq) {
		return
	}
	ssrc := binary.BigEndian.Uint32(b[8:])
	e := &s.slots[stampSlot(ssrc, seq)]
	e.key.Store(0) // readers see no entry while it changes
	e.at.Store(now.UnixNano())
	e.key.Store(stampKey(ssrc, seq))
}

// Arrival returns when the packet (ssrc, seq) came off the network, if it was
// stamped and not overwritten since.
func (s *Stamps) Arrival(ssrc uint32, seq uint16) (time.Time, bool) {
	e := &s.slots[stampSlot(ssrc, seq)]
	want := stampKey(ssrc, seq)
	if e.key.Load() != want {
		return time.Time{}, false
	}
	at := e.at.Load()
	if e.key.Load() != want {
		return time.Time{}, false
	}
	return time.Unix(0, at), true
}
