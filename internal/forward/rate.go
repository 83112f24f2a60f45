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
	start   int64            // bucket where the current run of packets began
	last    int64            // bucket of the newest packet
}

const bucket = int64(100 * time.Millisecond)

// flowingGap is how many buckets without a packet a flowing stream can have:
// video sends a packet every frame, 7.5 frames per second at the least.
const flowingGap = 2

func (r *rateMeter) add(now time.Time, bytes int) {
	idx := now.UnixNano() / bucket
	r.mu.Lock()
	if r.start == 0 || idx-r.last >= rateBuckets {
		r.start = idx // first packet, or the first after a whole window of silence
	}
	r.last = max(r.last, idx)
	r.advanceLocked(idx)
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
// A stream that began less than a window ago is averaged over the buckets it
// has filled, not the whole window, which would understate it.
func (r *rateMeter) bitrate(now time.Time) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	idx := now.UnixNano() / bucket
	r.advanceLocked(idx)
	full := min(idx-r.start, rateBuckets-1)
	if r.start == 0 || full <= 0 {
		return 0
	}
	total := 0
	for i := range r.buckets {
		if int64(i) != r.current%rateBuckets {
			total += r.buckets[i]
		}
	}
	return int(int64(total) * 8 * 10 / full)
}

// settled reports whether the current run of packets fills the whole window and
// is still flowing, so that bitrate is a full-window average rather than a
// stream's first or last moments.
func (r *rateMeter) settled(now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	idx := now.UnixNano() / bucket
	return r.start != 0 && idx-r.start >= rateBuckets-1 && idx-r.last <= flowingGap
}
