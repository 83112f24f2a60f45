// Package forward is the per-packet path: an UpTrack reads one received stream and
// hands each packet to the DownTracks (one per receiver) that accept it.
package forward

import (
	"time"

	"github.com/podium-sfu/podium/internal/media"
)

// Packet is one received RTP packet, parsed once and shared read-only by all destinations.
type Packet struct {
	Buf      []byte // the whole packet as received (decrypted)
	Header   media.RTPHeader
	Payload  []byte // without padding
	Keyframe bool   // start of a VP8 keyframe
	Arrival  time.Time
	Encoding int                 // simulcast encoding (0 = lowest; 0 without simulcast)
	VP8      media.VP8Descriptor // video only
	From     *UpTrack            // the track it arrived on (an audio slot forwards only its source's)
}
