package rewrite

import "time"

// VP8 RTP timestamps run at 90 kHz (RFC 7741 section 4.1).
const clockRate = 90000

const (
	// maxElapsed caps the wall time a timestamp may jump by, so the jump
	// stays far inside the 32-bit timestamp's half range.
	maxElapsed = time.Hour
	// maxTimestampSkew is how much further than wall time the timestamp of
	// an in-order packet may move before it is taken as a discontinuity
	// (source restart) rather than network jitter.
	maxTimestampSkew = 2 * clockRate
	// maxLateTicks is how much older than the newest output a packet's
	// timestamp may be for a far-behind packet to count as merely late.
	maxLateTicks = 5 * clockRate
)

// ticks converts a wall time duration into whole 90 kHz ticks (negative
// durations count as zero).
func ticks(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	d = min(d, maxElapsed)
	return int64(d) * clockRate / int64(time.Second)
}

// advanceBy is the timestamp step across a discontinuity: the wall time
// since the last forwarded packet, and at least one tick so timestamps
// strictly increase at the new frame.
func advanceBy(elapsed time.Duration) uint32 {
	return uint32(max(1, ticks(elapsed)))
}

// tsJumped reports whether output timestamp out, of an in-order packet,
// breaks from the last forwarded one: it goes backwards, or forwards by
// more than the wall time since then plus jitter.
func tsJumped(out, last uint32, elapsed time.Duration) bool {
	d := int64(int32(out - last))
	return d < 0 || d > ticks(elapsed)+maxTimestampSkew
}

// tsLooksLate reports whether output timestamp out is a little older than
// the last forwarded one, as a delayed packet of the same stream would be.
func tsLooksLate(out, last uint32) bool {
	d := int64(int32(out - last))
	return d <= 0 && d >= -maxLateTicks
}
