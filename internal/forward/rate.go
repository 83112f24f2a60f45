package forward

import (
	"sync"
	"time"
)

// rateBuckets of 100 ms make the averaging window: two seconds smooth out the
// frame-to-frame swings of video (a keyframe is several times a delta frame),
// which layer allocation must not mistake for a change of rate.
const rateBuckets = 20

// rateMeter measures a stream's bitrate over about two seconds in 100 ms buckets.
// The reader adds, the room loop reads; both are cheap and allocation-free.
type rateMeter struct {
	mu      sync.Mutex
	buckets [rateBuckets]int // bytes per 100 ms bucket
	current int64            // index of the newest bucket (unix time / 100 ms)
}

const bucket = int64(100 * time.Millisecond)

func (r *rateMeter) add(now time.Time, bytes int) {
	r.mu.Lock()
	r.advanceLocked(now.UnixNano() / bucket)
	r.buckets[r.current%rateBuckets] += bytes
	r.mu.Unlock()
}

func (r *rateMeter) advanceLocked(idx int64) {
	if idx <= r.current {
		return
	}
	for i := r.current + 1; i <= idx && i <= r.current+rateBuckets; i++ {
		r.buckets[i%rateBuckets] = 0
	}
	r.current = idx
}

// bitrate is the bits per second over the full buckets (all but the newest).
func (r *rateMeter) bitrate(now time.Time) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.advanceLocked(now.UnixNano() / bucket)
	total := 0
	for i := range r.buckets {
		if int64(i) != r.current%rateBuckets {
			total += r.buckets[i]
		}
	}
	return total * 8 * 10 / (rateBuckets - 1)
}
