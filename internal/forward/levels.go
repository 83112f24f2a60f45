package forward

import (
	"sync"
	"time"
)

// AudioLevel is one RFC 6464 observation: the raw 7-bit header value (0 = loudest,
// 127 = silence) and when its packet arrived.
type AudioLevel struct {
	At  time.Time
	Raw uint8
}

// levelRingSize holds well over one speaker-decision interval (300 ms) of 10 ms packets.
const levelRingSize = 64

// LevelRing hands audio levels from a track's reader to the room loop without a
// per-packet goroutine hand-off: the reader pushes, the room drains before each
// speaker decision. When the room falls behind, the oldest levels are overwritten.
type LevelRing struct {
	mu   sync.Mutex
	buf  [levelRingSize]AudioLevel
	head int // next write
	n    int
}

func (r *LevelRing) push(at time.Time, raw uint8) {
	r.mu.Lock()
	r.buf[r.head] = AudioLevel{At: at, Raw: raw}
	r.head = (r.head + 1) % levelRingSize
	if r.n < levelRingSize {
		r.n++
	}
	r.mu.Unlock()
}

// Drain appends the buffered levels to dst, oldest first, and empties the ring.
func (r *LevelRing) Drain(dst []AudioLevel) []AudioLevel {
	r.mu.Lock()
	defer r.mu.Unlock()
	start := (r.head - r.n + levelRingSize) % levelRingSize
	for i := 0; i < r.n; i++ {
		dst = append(dst, r.buf[(start+i)%levelRingSize])
	}
	r.n = 0
	return dst
}
