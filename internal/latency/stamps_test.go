package latency

import (
	"encoding/binary"
	"testing"
	"time"
)

func rtp(pt byte, seq uint16, ssrc uint32) []byte {
	b := make([]byte, 20)
	b[0] = 0x80
	b[1] = pt
	binary.BigEndian.PutUint16(b[2:], seq)
	binary.BigEndian.PutUint32(b[8:], ssrc)
	return b
}

func TestStampsRemembersSampledRTP(t *testing.T) {
	var s Stamps
	now := time.Unix(1000, 500)
	s.Observe(rtp(96, 32, 7), now)
	s.Observe(rtp(96, 33, 7), now)     // not sampled
	s.Observe(rtp(200, 48, 7), now)    // RTCP sender report
	s.Observe([]byte{0, 1, 0, 4}, now) // STUN
	if at, ok := s.Arrival(7, 32); !ok || !at.Equal(now) {
		t.Errorf("Arrival(7, 32) = %v %v, want %v", at, ok, now)
	}
	for _, c := range []struct {
		ssrc uint32
		seq  uint16
	}{{7, 33}, {7, 48}, {8, 32}, {7, 64}} {
		if _, ok := s.Arrival(c.ssrc, c.seq); ok {
			t.Errorf("Arrival(%d, %d) found a stamp that was never taken", c.ssrc, c.seq)
		}
	}
	later := now.Add(time.Second)
	s.Observe(rtp(96, 32, 7), later) // the number comes round again
	if at, _ := s.Arrival(7, 32); !at.Equal(later) {
		t.Errorf("a newer stamp did not replace the older: %v", at)
	}
}

func TestStampsDoNotAllocate(t *testing.T) {
	var s Stamps
	b := rtp(96, 16, 9)
	now := time.Now()
	if a := testing.AllocsPerRun(1000, func() { s.Observe(b, now); _, _ = s.Arrival(9, 16) }); a != 0 {
		t.Errorf("%v allocations", a)
	}
}
