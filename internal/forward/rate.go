package forward

import (
	"sync"
	"time"
)

// rateMeter measures a stream's bitrate over about one second in 100 ms buckets.
// The reader adds, the room loop reads; both are cheap and allocation-free.
type rateMeter struct {
	mu      sync.Mutex
	buckets [10]int // bytes per 100 ms bucket
	current int64   // index of the newest bucket (unix time / 100 ms)
}

const bucket = int64(100 * time.Millisecond)

func (r *rateMeter) add(now time.Time, bytes int) {
	r.mu.Lock()
	r.advanceLocked(now.UnixNano() / bucket)
	r.buckets[r.current%10] += bytes
	r.mu.Unlock()
}

func (r *rateMeter) advanceLocked(idx int64) {
	if idx <= r.current {
		return
	}
	for i := r.current + 1; i <= idx && i <= r.current+10; i++ {
		r.buckets[i%10] = 0
	}
	r.current = idx
}

// bitrate is the bits per second over the last ten full buckets.
func (r *rateMeter) bitrate(now time.Time) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.advanceLocked(now.UnixNano() / bucket)
	total := 0
	for i := range r.buckets {
		if int64(i) != r.current%10 {
			total += r.buckets[i]
		}
	}
	return total * 8 * 10 / 9
}
