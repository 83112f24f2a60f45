package bwe

import (
	"math"
	"time"
)

// Usage is the delay-based detector's hypothesis about the path.
type Usage int8

const (
	Normal   Usage = iota // delay steady
	Underuse              // queues draining
	Overuse               // queues building: we send more than the path carries
)

func (u Usage) String() string {
	switch u {
	case Normal:
		return "normal"
	case Underuse:
		return "underuse"
	case Overuse:
		return "overuse"
	}
	return "usage(?)"
}

// Trendline filter and adaptive threshold (libwebrtc's TrendlineEstimator; GCC
// draft §5.3–5.4 with the Kalman filter replaced by a least-squares slope).
const (
	trendWindow       = 20    // group deltas in the regression
	trendSmoothing    = 0.9   // exponential smoothing of the accumulated delay
	trendGain         = 4     // the slope is multiplied by gain × min(deltas, 60)
	trendMaxCount     = 60    //
	overuseTime       = 10.0  // ms the trend must stay above the threshold
	thresholdInitial  = 12.5  // ms
	thresholdMin      = 6.0   // ms
	thresholdMax      = 600.0 // ms
	thresholdKUp      = 0.0087
	thresholdKDown    = 0.039
	thresholdMaxDelta = 15.0 // ms: trends further above the threshold do not move it
)

// trendline estimates whether queuing delay grows from the slope of the
// smoothed accumulated delay over the last trendWindow group deltas, and
// compares it with a threshold that adapts to the path's jitter. It works in
// float milliseconds and does not allocate.
type trendline struct {
	xs, ys    [trendWindow]float64 // arrival time (ms since origin), smoothed delay (ms)
	n, next   int
	origin    time.Duration
	count     int // deltas seen, capped
	acc       float64
	smoothed  float64
	threshold float64
	lastAdapt float64 // ms; NaN before the first adaptation
	prevTrend float64
	overTime  float64 // ms over the threshold; negative when not over
	overCount int
	usage     Usage
	trend     float64 // the last modified trend, for Stats
}

func newTrendline() trendline {
	return trendline{threshold: thresholdInitial, lastAdapt: math.NaN(), overTime: -1}
}

// restart forgets the delay history (the receiver's clock jumped) but keeps
// the threshold, which describes the path.
func (t *trendline) restart() {
	thr := t.threshold
	*t = newTrendline()
	t.threshold = thr
}

// add takes one group delta and returns the hypothesis.
func (t *trendline) add(d delta) Usage {
	if t.n == 0 && t.count == 0 {
		t.origin = d.at
	}
	delay := ms(d.arrival) - ms(d.send)
	t.count = min(t.count+1, 1000)
	t.acc += delay
	t.smoothed = trendSmoothing*t.smoothed + (1-trendSmoothing)*t.acc
	x := ms(d.at - t.origin)
	t.xs[t.next], t.ys[t.next] = x, t.smoothed
	t.next = (t.next + 1) % trendWindow
	if t.n < trendWindow {
		t.n++
	}
	if t.n == trendWindow {
		trend, ok := t.slope()
		if !ok {
			trend = t.prevTrend
		}
		t.detect(trend, ms(d.send), x)
	}
	return t.usage
}

// slope is the least-squares slope of the window.
func (t *trendline) slope() (float64, bool) {
	var sx, sy float64
	for i := 0; i < t.n; i++ {
		sx += t.xs[i]
		sy += t.ys[i]
	}
	mx, my := sx/float64(t.n), sy/float64(t.n)
	var num, den float64
	for i := 0; i < t.n; i++ {
		dx := t.xs[i] - mx
		num += dx * (t.ys[i] - my)
		den += dx * dx
	}
	if den == 0 {
		return 0, false
	}
	return num / den, true
}

func (t *trendline) detect(trend, sendDelta, now float64) {
	if t.count < 2 {
		t.usage = Normal
		return
	}
	modified := float64(min(t.count, trendMaxCount)) * trend * trendGain
	t.trend = modified
	switch {
	case modified > t.threshold:
		if t.overTime < 0 {
			t.overTime = sendDelta / 2 // assume over for half the time since the last delta
		} else {
			t.overTime += sendDelta
		}
		t.overCount++
		if t.overTime > overuseTime && t.overCount > 1 && trend >= t.prevTrend {
			t.overTime, t.overCount = -1, 0
			t.usage = Overuse
		}
	case modified < -t.threshold:
		t.overTime, t.overCount = -1, 0
		t.usage = Underuse
	default:
		t.overTime, t.overCount = -1, 0
		t.usage = Normal
	}
	t.prevTrend = trend
	t.adapt(modified, now)
}

// adapt moves the threshold toward |modified|: quickly down (K_down), slowly up
// (K_up), ignoring spikes far above it, so it follows the path's jitter without
// hiding real congestion.
func (t *trendline) adapt(modified, now float64) {
	if math.IsNaN(t.lastAdapt) {
		t.lastAdapt = now
	}
	abs := math.Abs(modified)
	if abs > t.threshold+thresholdMaxDelta {
		t.lastAdapt = now
		return
	}
	k := thresholdKUp
	if abs < t.threshold {
		k = thresholdKDown
	}
	dt := math.Min(math.Max(now-t.lastAdapt, 0), 100)
	t.threshold += k * (abs - t.threshold) * dt
	t.threshold = math.Min(math.Max(t.threshold, thresholdMin), thresholdMax)
	t.lastAdapt = now
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
