// Package playout decides the least playout delay the SFU asks of a
// receiver's video jitter buffer, through the playout-delay RTP header
// extension (http://www.webrtc.org/experiments/rtp-hdrext/playout-delay).
//
// A lost video packet holds back every frame after it until its
// retransmission arrives, a round trip later. Chromium's jitter buffer
// covered that wait at round trips up to 220 ms here, not at 600 ms: there
// each repaired loss dropped the frames behind it, at 2 % loss a third of
// them. Asked to play video at least a round trip (and a
// margin) late, the receiver has the repair before the frame is due. That
// costs latency (the receiver delays audio too, for lip sync), so it is asked
// only while losses are being repaired on a path whose round trip the
// receiver's own wait does not cover, never beyond Max, and given back a
// while after the repairs stop. LiveKit's PlayoutDelayController makes the
// same trade from RTT and jitter.
package playout

import "time"

// Config are the thresholds; DefaultConfig gives the values measured with.
type Config struct {
	// MinRTT: below it a repair arrives within the receiver's own wait, and
	// nothing is asked (once asked, the delay follows the round trip down).
	// Chromium's jitter buffer adds the round trip itself once it NACKs,
	// which covered round trips of 110–220 ms (a 100 ms queue beside ten
	// downloads: 15–23 fps with nothing asked), not 600 ms (18 fps at 2 %
	// loss).
	MinRTT time.Duration
	// Margin is added to the round trip: the receiver's wait before it NACKs,
	// a frame interval, the jitter of the path.
	Margin time.Duration
	// Max bounds the delay asked: beyond it a conversation is no longer one,
	// and freezes are the better trade.
	Max time.Duration
	// Step: delays are asked in multiples of it, so that the round trip's
	// jitter does not retune the receiver on every update.
	Step time.Duration
	// Window and MinRepairs: repairs are happening while at least MinRepairs
	// packets were retransmitted within a Window. A stray loss is not a lossy
	// path.
	Window     time.Duration
	MinRepairs uint64
	// Hold is how long the delay stays after repairs stop.
	Hold time.Duration
	// PathWindow: the round trip the delay is asked from is the least
	// sampled over it (PathRTT), the path's without a standing queue.
	PathWindow time.Duration
}

// DefaultConfig: from a 250 ms round trip (the least of 10 s), ask RTT +
// 150 ms, at most 1 s, while three or more packets a 5 s window are repaired,
// for 30 s after.
func DefaultConfig() Config {
	return Config{
		MinRTT: 250 * time.Millisecond, Margin: 150 * time.Millisecond, Max: time.Second,
		Step: 50 * time.Millisecond, Window: 5 * time.Second, MinRepairs: 3, Hold: 30 * time.Second,
		PathWindow: 10 * time.Second,
	}
}

// Controller is one receiver's decision. It is a pure state machine: the
// owner passes the time in.
type Controller struct {
	cfg Config

	started    bool
	windowAt   time.Time // start of the current repair window
	windowBase uint64    // repairs counted when it started
	lastWindow uint64    // repairs in the window before
	lossyAt    time.Time // last time repairs were happening
	delay      time.Duration
}

// New returns a controller that asks nothing yet.
func New(cfg Config) *Controller { return &Controller{cfg: cfg} }

// Update takes the round trip of the receiver's path (0: unknown; the owner
// passes PathRTT's least, without the queue) and its count of retransmitted
// packets so far, and returns the least playout delay to ask
// for; 0 asks nothing.
func (c *Controller) Update(now time.Time, rtt time.Duration, repairs uint64) time.Duration {
	if !c.started {
		c.started, c.windowAt, c.windowBase = true, now, repairs
	}
	if now.Sub(c.windowAt) >= c.cfg.Window {
		c.lastWindow = repairs - c.windowBase
		c.windowAt, c.windowBase = now, repairs
	}
	if max(c.lastWindow, repairs-c.windowBase) >= c.cfg.MinRepairs {
		c.lossyAt = now
	}
	if c.lossyAt.IsZero() || now.Sub(c.lossyAt) >= c.cfg.Hold {
		c.delay = 0
		return 0
	}
	// MinRTT starts it; once asked, it follows the round trip down but is
	// not given back for it while repairs go on: a round trip wavering
	// around MinRTT (a standing queue beside downloads) would otherwise
	// switch it on and off every few seconds.
	var want time.Duration
	if rtt >= c.cfg.MinRTT || c.delay > 0 {
		want = min(roundUp(rtt+c.cfg.Margin, c.cfg.Step), c.cfg.Max)
	}
	// Up at once, a repair due now needs it; down only by more than a step,
	// so that a round trip wavering across a step boundary changes nothing.
	if want > c.delay || want+c.cfg.Step < c.delay {
		c.delay = want
	}
	return c.delay
}

func roundUp(d, step time.Duration) time.Duration {
	if step <= 0 {
		return d
	}
	return (d + step - 1) / step * step
}

// Extension is the playout-delay extension's 3 bytes: the least and the
// largest delay in 10 ms units, 12 bits each. The largest is libwebrtc's
// default (10 s): a small one would make the receiver drop frames to keep
// to it, and 0 and 0 asks for no smoothing at all.
func Extension(least time.Duration) [3]byte {
	const unit, largest = 10 * time.Millisecond, 10 * time.Second
	lo := min(uint32(least/unit), 0xfff)
	hi := uint32(largest / unit)
	return [3]byte{byte(lo >> 4), byte(lo<<4) | byte(hi>>8), byte(hi)}
}

// Least is the least delay an extension asks.
func Least(ext [3]byte) time.Duration {
	return time.Duration(uint32(ext[0])<<4|uint32(ext[1])>>4) * 10 * time.Millisecond
}
