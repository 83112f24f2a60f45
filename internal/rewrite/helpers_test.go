package rewrite

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/podium-sfu/podium/internal/media"
)

// pktSpec describes one VP8 RTP packet to build.
type pktSpec struct {
	seq    uint16
	ts     uint32
	ssrc   uint32
	marker bool
	ext    bool // add a one-byte header extension block (abs-send-time)

	noX     bool  // no extension byte in the descriptor at all
	pidBits uint8 // 0 (no picture id), 7 or 15
	pid     uint16
	hasL    bool
	tl0     uint8
	hasT    bool
	tid     uint8
	sync    bool
	hasK    bool
	keyidx  uint8
	start   bool // S=1, partition 0
	key     bool // frame tag of a key frame (with start)

	body []byte // VP8 data after the frame tag
}

// build lays the packet out as a browser would.
func (s pktSpec) build() []byte {
	b := make([]byte, 0, 48+len(s.body))
	b = append(b, 0x80, 96, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
	if s.marker {
		b[1] |= 0x80
	}
	binary.BigEndian.PutUint16(b[2:], s.seq)
	binary.BigEndian.PutUint32(b[4:], s.ts)
	binary.BigEndian.PutUint32(b[8:], s.ssrc)
	if s.ext {
		b[0] |= 0x10
		b = append(b, 0xbe, 0xde, 0, 1, 0x22, 0x01, 0x02, 0x03)
	}
	d0 := byte(0)
	if s.start {
		d0 |= 0x10
	}
	if s.noX {
		b = append(b, d0)
	} else {
		x := byte(0)
		if s.pidBits != 0 {
			x |= 0x80
		}
		if s.hasL {
			x |= 0x40
		}
		if s.hasT {
			x |= 0x20
		}
		if s.hasK {
			x |= 0x10
		}
		b = append(b, d0|0x80, x)
		switch s.pidBits {
		case 7:
			b = append(b, byte(s.pid&0x7f))
		case 15:
			b = append(b, 0x80|byte(s.pid>>8&0x7f), byte(s.pid))
		}
		if s.hasL {
			b = append(b, s.tl0)
		}
		if s.hasT || s.hasK {
			tk := s.keyidx & 0x1f
			if s.hasT {
				tk |= s.tid << 6
				if s.sync {
					tk |= 0x20
				}
			}
			b = append(b, tk)
		}
	}
	tag := byte(0x11) // inter frame (P=1)
	if s.key {
		tag = 0x10
	}
	b = append(b, tag)
	return append(b, s.body...)
}

// parsed is a packet with its headers parsed by internal/media.
type parsed struct {
	buf []byte
	hdr media.RTPHeader
	vp8 media.VP8Descriptor
}

func parse(t testing.TB, buf []byte) *parsed {
	t.Helper()
	p := &parsed{buf: buf}
	if err := media.ParseRTPHeader(buf, &p.hdr); err != nil {
		t.Fatalf("ParseRTPHeader: %v", err)
	}
	if err := media.ParseVP8(p.hdr.Payload(buf), &p.vp8); err != nil {
		t.Fatalf("ParseVP8: %v", err)
	}
	return p
}

// feed projects p as a packet of encoding enc arriving at now.
func feed(pr *Projector, now time.Time, enc int, p *parsed) (Output, bool) {
	return pr.Project(now, enc, &p.hdr, &p.vp8, p.vp8.IsKeyframe())
}

// t0 is the simulated start of every test; no test reads the clock.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// ms is a simulated instant n milliseconds after t0.
func ms(n float64) time.Time { return t0.Add(time.Duration(n * float64(time.Millisecond))) }
