// Package clip holds the pre-encoded media the load generator sends — VP8 video in
// IVF files, Opus audio in Ogg files, RFC 6464 levels — and the parsers that read
// them into frames. tools/media/encode.sh makes the files in data/.
package clip

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// ErrFormat means a file is not what its parser expects.
var ErrFormat = errors.New("clip: malformed file")

// temporalPattern is the temporal layer of frame i mod 4 in the clips: libvpx's
// three-layer pattern (ts_layering_mode 3), which webrtc.org's VP8 encoder also uses.
var temporalPattern = [4]uint8{0, 2, 1, 2}

// Frame is one encoded VP8 frame.
type Frame struct {
	Data []byte
	Key  bool
	// TID is the temporal layer (0 = base); Sync (the descriptor's Y bit) marks a
	// frame that depends only on the base layer, where a receiver can switch up.
	TID  uint8
	Sync bool
}

// Video is a whole VP8 clip.
type Video struct {
	Width, Height int
	FrameDuration time.Duration
	Frames        []Frame
}

// Bitrate is the clip's average bitrate in bits per second.
func (v *Video) Bitrate() int {
	if len(v.Frames) == 0 || v.FrameDuration <= 0 {
		return 0
	}
	bytes := 0
	for _, f := range v.Frames {
		bytes += len(f.Data)
	}
	return int(float64(bytes*8) / (float64(len(v.Frames)) * v.FrameDuration.Seconds()))
}

// NextKey returns the index of the first keyframe at or after i, wrapping around.
func (v *Video) NextKey(i int) int {
	for k := range v.Frames {
		j := (i + k) % len(v.Frames)
		if v.Frames[j].Key {
			return j
		}
	}
	return 0
}

const (
	ivfHeaderLen      = 32
	ivfFrameHeaderLen = 12
)

// ParseIVF reads a VP8 IVF file (the libvpx container: a 32-byte file header, then
// each frame's 4-byte size and 8-byte timestamp). Frames keep pointing into b.
func ParseIVF(b []byte) (*Video, error) {
	if len(b) < ivfHeaderLen || string(b[0:4]) != "DKIF" {
		return nil, fmt.Errorf("%w: no IVF signature", ErrFormat)
	}
	if string(b[8:12]) != "VP80" {
		return nil, fmt.Errorf("%w: codec %q, want VP80", ErrFormat, b[8:12])
	}
	hdrLen := int(binary.LittleEndian.Uint16(b[6:]))
	rate := binary.LittleEndian.Uint32(b[16:])  // timebase denominator
	scale := binary.LittleEndian.Uint32(b[20:]) // timebase numerator
	if hdrLen < ivfHeaderLen || hdrLen > len(b) || rate == 0 || scale == 0 {
		return nil, fmt.Errorf("%w: bad IVF header", ErrFormat)
	}
	v := &Video{
		Width:  int(binary.LittleEndian.Uint16(b[12:])),
		Height: int(binary.LittleEndian.Uint16(b[14:])),
	}
	var pts []uint64
	for off := hdrLen; off < len(b); {
		if len(b)-off < ivfFrameHeaderLen {
			return nil, fmt.Errorf("%w: truncated frame header at %d", ErrFormat, off)
		}
		size := int(binary.LittleEndian.Uint32(b[off:]))
		pts = append(pts, binary.LittleEndian.Uint64(b[off+4:]))
		off += ivfFrameHeaderLen
		if size == 0 || size > len(b)-off {
			return nil, fmt.Errorf("%w: frame of %d bytes at %d", ErrFormat, size, off)
		}
		data := b[off : off+size]
		off += size
		i := len(v.Frames)
		tid := temporalPattern[i%len(temporalPattern)]
		// In the 0-2-1-2 pattern the first two frames after a base frame
		// reference only the base layer; the third also the layer-1 frame.
		v.Frames = append(v.Frames, Frame{Data: data, Key: data[0]&0x01 == 0, TID: tid, Sync: tid > 0 && i%4 != 3})
	}
	if len(v.Frames) == 0 {
		return nil, fmt.Errorf("%w: no frames", ErrFormat)
	}
	if !v.Frames[0].Key {
		return nil, fmt.Errorf("%w: the first frame is not a keyframe", ErrFormat)
	}
	// The frame interval from the timestamps (the IVF header's frame rate field is
	// unreliable); one frame alone takes the timebase unit.
	ticks := uint64(1)
	if n := len(pts); n > 1 && pts[n-1] > pts[0] {
		ticks = (pts[n-1] - pts[0]) / uint64(n-1)
	}
	v.FrameDuration = time.Duration(float64(ticks) * float64(scale) / float64(rate) * float64(time.Second))
	if v.FrameDuration <= 0 {
		return nil, fmt.Errorf("%w: bad timebase", ErrFormat)
	}
	for i := range v.Frames {
		if v.Frames[i].Key {
			// A keyframe resets the pattern's references: it is a base frame.
			v.Frames[i].TID, v.Frames[i].Sync = 0, false
		}
	}
	return v, nil
}
