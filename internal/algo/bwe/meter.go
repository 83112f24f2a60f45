package bwe

import "time"

const (
	meterBucket  = 25 * time.Millisecond
	meterSlots   = 32
	maxMeterSpan = (meterSlots - 1) * meterBucket
)

// meter measures a byte rate over a sliding time window in fixed buckets. The
// times are on any clock (send time here, the receiver's arrival clock for
// acknowledged bytes); they should mostly increase. It does not allocate.
type meter struct {
	head    int64         // bucket index of the newest time seen
	first   int64         // bucket index of the first time since the last reset
	latest  time.Duration // newest time seen
	started bool
	sums    [meterSlots]int64 // last, so that the fields above share a cache line with what precedes the meter
}

func bucketOf(t time.Duration) int64 {
	b := int64(t / meterBucket)
	if t < 0 && t%meterBucket != 0 {
		b-- // floor for times before the origin
	}
	return b
}

func (m *meter) reset(t time.Duration) {
	m.sums = [meterSlots]int64{}
	m.head = bucketOf(t)
	m.first = m.head
	m.latest = t
	m.started = true
}

// add counts bytes at time t. Slightly late times land in their bucket; a jump
// backwards beyond the window (a clock reset) restarts the meter.
func (m *meter) add(t time.Duration, bytes int) {
	if !m.started {
		m.reset(t)
	}
	b := bucketOf(t)
	switch {
	case b > m.head:
		if b-m.head >= meterSlots {
			m.sums = [meterSlots]int64{}
		} else {
			for i := m.head + 1; i <= b; i++ {
				m.sums[mod(i)] = 0
			}
		}
		m.head = b
		m.latest = t
	case b <= m.head-meterSlots:
		m.reset(t)
	case t > m.latest:
		m.latest = t
	}
	if b < m.first {
		m.first = b
	}
	m.sums[mod(b)] += int64(bytes)
}

func mod(b int64) int64 {
	r := b % meterSlots
	if r < 0 {
		r += meterSlots
	}
	return r
}

// rate returns bits per second over the complete buckets covering window
// before the newest (partial) bucket, and false while less than half the
// window has been observed. Whole buckets keep the estimate unbiased: a window
// ending at the newest packet would count that whole packet in a sliver of
// time, which at low packet rates inflates the rate by a packet per window.
func (m *meter) rate(window time.Duration) (float64, bool) {
	if !m.started {
		return 0, false
	}
	n := int64(window / meterBucket)
	n = max(1, min(n, meterSlots-1))
	to := m.head - 1
	from := max(to-n+1, m.first)
	if to < from || (to-from+1)*2 < n {
		return 0, false
	}
	var sum int64
	for b := from; b <= to; b++ {
		sum += m.sums[mod(b)]
	}
	return float64(sum) * 8 / (time.Duration(to-from+1) * meterBucket).Seconds(), true
}

// rateAt is rate with the window ending at now rather than at the newest sample
// (for the send side, where now is known and silence must count).
func (m *meter) rateAt(now, window time.Duration) float64 {
	if !m.started {
		return 0
	}
	if now > m.latest {
		m.add(now, 0)
	}
	r, _ := m.rate(window)
	return r
}
