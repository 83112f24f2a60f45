package e2e

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// videoSample is one reading of a browser's inbound video from one source: the
// browser's inbound-rtp entry (window.podium.stats()) and the SFU's view of the
// downlink from its last `stats` message (window.podium.bandwidth(), about once a
// second).
type videoSample struct {
	At            time.Time
	OK            bool // the source's inbound video was in the stats
	Width, Height int
	FramesDecoded int
	FPS           float64 // Chromium's framesPerSecond: decoded frames over its last second
	FreezeCount   int
	FreezeSeconds float64 // totalFreezesDuration
	BytesReceived int64   // RTP payload bytes
	PacketsLost   int
	NACKCount     int
	PLICount      int

	// The SFU's view (zero before its first `stats`).
	Estimate  int  // downlink estimate, bits/s
	Allocated int  // bits/s its chosen layers take, audio included
	Switches  int  // layer changes made for bandwidth since join
	Encoding  int  // simulcast encoding it forwards of this source (0 = lowest; -1 none or unknown)
	Suspended bool // this source's video is suspended for lack of bandwidth
}

// videoSamples are readings in time order. Their analyses take a window
// [from, to] of wall-clock time (marks the test took with time.Now, e.g. when it
// changed the link); a zero to means up to the last sample.
type videoSamples []videoSample

// sampleEvery is the sampler's period: the resolution of every time it measures.
const sampleEvery = 200 * time.Millisecond

// A sampler reads b's inbound video from one source every 200 ms in its own
// goroutine, until Stop (or the test's end).
type sampler struct {
	b    *Browser
	id   string
	stop chan struct{}
	done chan struct{}
	once sync.Once

	mu  sync.Mutex
	got videoSamples
}

func startSampler(t *testing.T, b *Browser, id string) *sampler {
	s := &sampler{b: b, id: id, stop: make(chan struct{}), done: make(chan struct{})}
	go s.run()
	t.Cleanup(func() { s.Stop() })
	return s
}

func (s *sampler) run() {
	defer close(s.done)
	tick := time.NewTicker(sampleEvery)
	defer tick.Stop()
	for {
		v := s.b.videoSample(s.id)
		s.mu.Lock()
		s.got = append(s.got, v)
		s.mu.Unlock()
		select {
		case <-s.stop:
			return
		case <-tick.C:
		}
	}
}

// Samples returns the readings so far.
func (s *sampler) Samples() videoSamples {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append(videoSamples(nil), s.got...)
}

// Stop ends the sampling and returns every reading.
func (s *sampler) Stop() videoSamples {
	s.once.Do(func() { close(s.stop) })
	<-s.done
	return s.Samples()
}

// Await polls the readings every 200 ms until cond holds of them or timeout
// passes, and returns how long it waited.
func (s *sampler) Await(timeout time.Duration, cond func(videoSamples) bool) (time.Duration, bool) {
	start := time.Now()
	for {
		if cond(s.Samples()) {
			return time.Since(start), true
		}
		if time.Since(start) >= timeout {
			return time.Since(start), false
		}
		time.Sleep(sampleEvery)
	}
}

// videoSample reads b's inbound video from id now; OK is false when there is
// none (or the page did not answer). At is the middle of the round trip.
func (b *Browser) videoSample(id string) videoSample {
	start := time.Now()
	var got struct {
		Rows []struct {
			inboundVideo
			FramesPerSecond float64 `json:"framesPerSecond"`
			BytesReceived   int64   `json:"bytesReceived"`
			PacketsLost     int     `json:"packetsLost"`
			NACKCount       int     `json:"nackCount"`
		} `json:"rows"`
		BW *struct {
			Estimate  int `json:"estimate"`
			Allocated int `json:"allocated"`
			Switches  int `json:"switches"`
			Videos    map[string]struct {
				Encoding int `json:"encoding"`
			} `json:"videos"`
		} `json:"bw"`
		Suspended bool `json:"suspended"`
	}
	err := b.eval(fmt.Sprintf(`(async (id) => {
		const p = window.podium;
		if (!p) return {rows: []};
		const s = await p.stats();
		return {
			rows: s.inbound.filter(r => r.kind === 'video' && r.participantId === id),
			bw: p.bandwidth ? p.bandwidth() : null,
			suspended: p.suspended ? p.suspended().includes(id) : false,
		};
	})(%q)`, id), &got)
	v := videoSample{At: start.Add(time.Since(start) / 2), Encoding: -1}
	if err != nil {
		return v
	}
	v.Suspended = got.Suspended
	if bw := got.BW; bw != nil {
		v.Estimate, v.Allocated, v.Switches = bw.Estimate, bw.Allocated, bw.Switches
		if video, ok := bw.Videos[id]; ok {
			v.Encoding = video.Encoding
		}
	}
	if len(got.Rows) == 0 {
		return v
	}
	r := got.Rows[0]
	v.OK = true
	v.Width, v.Height, v.FramesDecoded, v.FPS = r.FrameWidth, r.FrameHeight, r.FramesDecoded, r.FramesPerSecond
	v.FreezeCount, v.FreezeSeconds = r.FreezeCount, r.FreezeSeconds
	v.BytesReceived, v.PacketsLost, v.NACKCount, v.PLICount = r.BytesReceived, r.PacketsLost, r.NACKCount, r.PLICount
	return v
}

// Window is the samples taken in [from, to].
func (ss videoSamples) Window(from, to time.Time) videoSamples {
	var out videoSamples
	for _, s := range ss {
		if !s.At.Before(from) && (to.IsZero() || !s.At.After(to)) {
			out = append(out, s)
		}
	}
	return out
}

// Span is the time between the first and the last sample of the window: less
// than to − from when the sampling started late or a reading is still to come.
func (ss videoSamples) Span(from, to time.Time) time.Duration {
	w := ss.Window(from, to)
	if len(w) == 0 {
		return 0
	}
	return w[len(w)-1].At.Sub(w[0].At)
}

// Until is how long after from the first sample satisfying cond came.
func (ss videoSamples) Until(from time.Time, cond func(videoSample) bool) (time.Duration, bool) {
	for _, s := range ss.Window(from, time.Time{}) {
		if cond(s) {
			return s.At.Sub(from), true
		}
	}
	return 0, false
}

// UntilHeightBelow is how long after from the decoded video was first shorter
// than height (e.g. a lower simulcast layer after a cap).
func (ss videoSamples) UntilHeightBelow(from time.Time, height int) (time.Duration, bool) {
	return ss.Until(from, func(s videoSample) bool { return s.OK && s.Height > 0 && s.Height < height })
}

// LongestFreeze is the longest stretch of the window over which framesDecoded
// did not rise: from the sample after which no new frame came to the last sample
// before one did (a stall still going at the window's end counts up to its end).
// Readings without the video count as no new frame. With 200 ms samples it reads
// up to 200 ms short of the true gap between frames; a 30 fps video reads 0.
func (ss videoSamples) LongestFreeze(from, to time.Time) time.Duration {
	w := ss.Window(from, to)
	if len(w) == 0 {
		return 0
	}
	var longest time.Duration
	var last *videoSample // last reading with the video
	start := w[0].At
	for i := range w {
		s := &w[i]
		if i > 0 && frames(last, s) > 0 {
			longest = max(longest, w[i-1].At.Sub(start))
			start = s.At
		}
		if s.OK {
			last = s
		}
	}
	return max(longest, w[len(w)-1].At.Sub(start))
}

// frames is how many frames were decoded from reading a to reading b (a nil:
// none before). A counter that went down belongs to a new receiver: all of b's.
func frames(a, b *videoSample) int {
	switch {
	case !b.OK:
		return 0
	case a == nil || b.FramesDecoded < a.FramesDecoded:
		return b.FramesDecoded
	default:
		return b.FramesDecoded - a.FramesDecoded
	}
}

// counted sums step over consecutive readings with the video in the window, and
// gives the time between the first and last of them.
func (ss videoSamples) counted(from, to time.Time, step func(a, b *videoSample) float64) (float64, time.Duration) {
	var first, last *videoSample
	sum := 0.0
	w := ss.Window(from, to)
	for i := range w {
		s := &w[i]
		if !s.OK {
			continue
		}
		if last != nil {
			sum += step(last, s)
		} else {
			first = s
		}
		last = s
	}
	if first == nil {
		return 0, 0
	}
	return sum, last.At.Sub(first.At)
}

// MeanFPS is the frames decoded over the window divided by its length.
func (ss videoSamples) MeanFPS(from, to time.Time) float64 {
	n, d := ss.counted(from, to, func(a, b *videoSample) float64 { return float64(frames(a, b)) })
	if d <= 0 {
		return 0
	}
	return n / d.Seconds()
}

// HeightChanges counts the times the decoded height changed over the window
// (samples without video or height are skipped): layer switches, as the
// receiver sees them at 200 ms resolution.
func (ss videoSamples) HeightChanges(from, to time.Time) int {
	n, last := 0, 0
	for _, s := range ss.Window(from, to) {
		if !s.OK || s.Height == 0 {
			continue
		}
		if last != 0 && s.Height != last {
			n++
		}
		last = s.Height
	}
	return n
}

// SFUSwitches is how many layer changes for bandwidth the SFU reported making
// over the window (its `stats` switches counter, for all of this receiver's videos).
func (ss videoSamples) SFUSwitches(from, to time.Time) int {
	w := ss.Window(from, to)
	if len(w) < 2 {
		return 0
	}
	return w[len(w)-1].Switches - w[0].Switches
}

// Bitrate is the video received over the window in kb/s (RTP payload).
func (ss videoSamples) Bitrate(from, to time.Time) float64 {
	bytes, d := ss.counted(from, to, func(a, b *videoSample) float64 {
		if b.BytesReceived < a.BytesReceived {
			return float64(b.BytesReceived)
		}
		return float64(b.BytesReceived - a.BytesReceived)
	})
	if d <= 0 {
		return 0
	}
	return bytes * 8 / 1000 / d.Seconds()
}

// FrozenSeconds is the freeze time Chromium counted over the window
// (totalFreezesDuration; its freezes are judged against the recent frame rate).
func (ss videoSamples) FrozenSeconds(from, to time.Time) float64 {
	w := ss.Window(from, to)
	if len(w) < 2 {
		return 0
	}
	return w[len(w)-1].FreezeSeconds - w[0].FreezeSeconds
}

// Lost is how many video packets the receiver counted lost over the window.
func (ss videoSamples) Lost(from, to time.Time) int {
	w := ss.Window(from, to)
	if len(w) < 2 {
		return 0
	}
	return w[len(w)-1].PacketsLost - w[0].PacketsLost
}

// Summary describes the window in one line, for logs.
func (ss videoSamples) Summary(from, to time.Time) string {
	w := ss.Window(from, to)
	if len(w) == 0 {
		return "no samples"
	}
	last := w[len(w)-1]
	return fmt.Sprintf("%d samples over %v: %.0f kb/s, %.1f fps, last %dx%d, height changes %d, longest stall %v, frozen %.2f s, "+
		"lost %d, NACKs %d, PLIs %d; SFU: estimate %d kb/s, allocated %d kb/s, encoding %d, suspended %v, switches %d",
		len(w), last.At.Sub(w[0].At).Round(time.Millisecond), ss.Bitrate(from, to), ss.MeanFPS(from, to),
		last.Width, last.Height, ss.HeightChanges(from, to), ss.LongestFreeze(from, to).Round(time.Millisecond),
		ss.FrozenSeconds(from, to), ss.Lost(from, to), last.NACKCount-w[0].NACKCount, last.PLICount-w[0].PLICount,
		last.Estimate/1000, last.Allocated/1000, last.Encoding, last.Suspended, last.Switches-w[0].Switches)
}

// Timeline lists the window's readings, one per line, as offsets from its
// start: the size decoded, frames decoded since the reading before, losses,
// NACKs and PLIs so far, and what the SFU said of the downlink. For a failure's
// log: it shows where a freeze sat against the switches that caused it.
func (ss videoSamples) Timeline(from, to time.Time) string {
	var b strings.Builder
	var last *videoSample // the last reading with the video, the window's first counted from the one before
	for i := range ss {
		s := &ss[i]
		if !s.At.Before(from) && (to.IsZero() || !s.At.After(to)) {
			fmt.Fprintf(&b, "\n  +%5.2fs", s.At.Sub(from).Seconds())
			if !s.OK {
				b.WriteString(" no video")
			} else {
				fmt.Fprintf(&b, " %4dx%-4d +%2d frames, lost %d, NACKs %d, PLIs %d; SFU: estimate %d kb/s, allocated %d kb/s, encoding %d",
					s.Width, s.Height, frames(last, s), s.PacketsLost, s.NACKCount, s.PLICount, s.Estimate/1000, s.Allocated/1000, s.Encoding)
			}
			if s.Suspended {
				b.WriteString(", suspended")
			}
		}
		if s.OK {
			last = s
		}
	}
	return b.String()
}

// The analyses on a made-up trace: 30 fps at 720p, a 1 s stall, a drop to 360p.
func TestVideoSamplesAnalysis(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var ss videoSamples
	frames, bytes := 0, int64(0)
	for i := 0; i <= 50; i++ { // 10 s every 200 ms
		at := t0.Add(time.Duration(i) * sampleEvery)
		h := 720
		if i >= 30 {
			h = 360
		}
		stalled := i > 10 && i <= 15 // no new frame in samples 11..15: 10 → 15 is 1 s
		if !stalled && i > 0 {
			frames += 6
			bytes += 25_000 // 1 Mb/s
		}
		ss = append(ss, videoSample{At: at, OK: true, Width: h * 16 / 9, Height: h, FramesDecoded: frames, BytesReceived: bytes})
	}
	ss[40].OK = false // one missed reading: no height, no progress counted

	if got := ss.LongestFreeze(t0, time.Time{}); got != time.Second {
		t.Errorf("LongestFreeze = %v, want 1s", got)
	}
	around := func(d time.Duration) (time.Time, time.Time) { return t0.Add(7 * time.Second), t0.Add(d) }
	if got := ss.LongestFreeze(around(9 * time.Second)); got != 200*time.Millisecond {
		t.Errorf("LongestFreeze around the missed reading = %v, want 200ms", got)
	}
	if got := ss.MeanFPS(around(9 * time.Second)); got < 29.9 || got > 30.1 {
		t.Errorf("MeanFPS across a missed reading = %v, want 30", got)
	}
	if got := ss.Bitrate(around(9 * time.Second)); got < 999 || got > 1001 {
		t.Errorf("Bitrate across a missed reading = %v, want 1000", got)
	}
	if got := ss.MeanFPS(t0, t0.Add(2*time.Second)); got < 29.9 || got > 30.1 {
		t.Errorf("MeanFPS over 0..2 s = %v, want 30", got)
	}
	if got := ss.MeanFPS(t0.Add(2*time.Second), t0.Add(3*time.Second)); got != 0 {
		t.Errorf("MeanFPS over the stall = %v, want 0", got)
	}
	if got := ss.Bitrate(t0, t0.Add(2*time.Second)); got < 999 || got > 1001 {
		t.Errorf("Bitrate = %v, want 1000 kb/s", got)
	}
	if got, ok := ss.UntilHeightBelow(t0.Add(time.Second), 720); !ok || got != 5*time.Second {
		t.Errorf("UntilHeightBelow = %v %v, want 5s", got, ok)
	}
	if _, ok := ss.UntilHeightBelow(t0, 360); ok {
		t.Error("UntilHeightBelow(360) found a sample")
	}
	if got := ss.HeightChanges(t0, time.Time{}); got != 1 {
		t.Errorf("HeightChanges = %d, want 1", got)
	}
	if got := ss.HeightChanges(t0, t0.Add(5*time.Second)); got != 0 {
		t.Errorf("HeightChanges before the drop = %d, want 0", got)
	}
	tl := ss.Timeline(t0.Add(2*time.Second), t0.Add(3*time.Second))
	if lines := strings.Split(tl, "\n")[1:]; len(lines) != 6 || !strings.Contains(lines[1], "+ 0.20s 1280x720  + 0 frames") ||
		!strings.Contains(lines[5], "+ 1.00s 1280x720  + 0 frames") || !strings.Contains(lines[0], "+ 0.00s 1280x720  + 6 frames") {
		t.Errorf("Timeline over 2..3 s, one line a reading, the stall's without frames:%s", tl)
	}
	t.Log(ss.Summary(t0, time.Time{}))
}
