package load

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/podium-sfu/podium/internal/latency"
)

// activeWindow: a received stream counts as active if a packet came this recently.
const activeWindow = time.Second

// Totals are a run's cumulative counters at one moment.
type Totals struct {
	At           time.Time
	Participants int
	Connected    int
	Reconnects   uint64
	DialErrors   uint64
	Joins        uint64    // successful joins, rejoins included
	Signaling    Signaling // what the participants received over signaling

	TxAudioPackets, TxAudioBytes uint64
	TxVideoPackets, TxVideoBytes uint64
	TxFrames, TxKeyframes        uint64
	PausedPublishers             int    // publishers the SFU told to stop sending video
	KeyframeRequests             uint64 // PLI/FIR the publishers received
	NACKed, Retransmitted        uint64 // by the publishers

	RxAudioPackets, RxAudioBytes uint64
	RxVideoPackets, RxVideoBytes uint64
	RxFrames, RxKeyframes        uint64
	RxExpected, RxReceived       uint64 // for loss: sequence numbers spanned, packets counted

	// Streams that had a packet within the last second.
	RxAudioStreams, RxVideoStreams int
	// Videos announced in forwarded messages still waiting for their first keyframe.
	WaitingForKeyframe int
	LongestWait        time.Duration

	KeyframeWaits   latency.Snapshot // announcement → first keyframe, per video
	AudioLatency    latency.Snapshot // sender's write → receiver's read (same process)
	AudioLatencySum time.Duration    // of the same: with AudioLatency.Count(), the mean
}

// Totals reads the counters.
func (r *Run) Totals() Totals {
	now := time.Now()
	t := Totals{At: now, Participants: len(r.parts), DialErrors: r.dialErrors.Load(), Joins: r.joins.Load(), Signaling: r.signaling.snapshot()}
	var rx rxTotals
	r.tracksMu.Lock()
	rx = r.retired
	for _, p := range r.parts {
		for _, x := range p.recv.tracks {
			rx.add(x)
			if now.UnixNano()-x.last.Load() < int64(activeWindow) {
				if x.video {
					t.RxVideoStreams++
				} else {
					t.RxAudioStreams++
				}
			}
		}
	}
	r.tracksMu.Unlock()
	t.RxAudioPackets, t.RxAudioBytes = rx.AudioPackets, rx.AudioBytes
	t.RxVideoPackets, t.RxVideoBytes = rx.VideoPackets, rx.VideoBytes
	t.RxFrames, t.RxKeyframes = rx.Frames, rx.Keyframes
	t.RxExpected, t.RxReceived = rx.Expected, rx.Received
	for _, p := range r.parts {
		if p.connected.Load() {
			t.Connected++
		}
		t.Reconnects += p.reconnects.Load()
		n, longest := p.recv.waitingNow(now)
		t.WaitingForKeyframe += n
		t.LongestWait = max(t.LongestWait, longest)
		if p.snd == nil {
			continue
		}
		s := &p.snd.src.stats
		if s.Paused.Load() {
			t.PausedPublishers++
		}
		t.TxAudioPackets += s.AudioPackets.Load()
		t.TxAudioBytes += s.AudioBytes.Load()
		t.TxVideoPackets += s.VideoPackets.Load()
		t.TxVideoBytes += s.VideoBytes.Load()
		t.TxFrames += s.VideoFrames.Load()
		t.TxKeyframes += s.Keyframes.Load()
		t.KeyframeRequests += s.KeyframeRequests.Load()
		t.NACKed += s.NACKed.Load()
		t.Retransmitted += s.Retransmitted.Load()
	}
	t.KeyframeWaits = r.keyframeWaits.Snapshot()
	t.AudioLatency = r.audioLatency.Snapshot()
	t.AudioLatencySum = time.Duration(r.audioLatencySum.Load())
	return t
}

// Window is what happened between two Totals, as rates.
type Window struct {
	Elapsed  time.Duration // since the run started, at the window's end
	Duration time.Duration

	Connected, Participants int
	Reconnects, Joins       uint64
	Signaling               Signaling // received by the participants in the window

	TxKbps, TxPacketsPerS float64 // RTP payload bytes the participants sent
	TxFramesPerS          float64
	RxKbps                float64 // RTP packets (header and payload) received
	RxAudioPacketsPerS    float64
	RxVideoPacketsPerS    float64
	RxFramesPerS          float64 // video frames completed (marker bit), all streams
	RxAudioStreams        int
	RxVideoStreams        int
	LossPercent           float64 // of the sequence numbers expected, after retransmissions

	KeyframeRequests, NACKed, Retransmitted uint64
	KeyframeWaits                           uint64
	KeyframeWaitP50, KeyframeWaitMax        time.Duration
	WaitingForKeyframe                      int
	PausedPublishers                        int // at the window's end

	AudioLatencyP50, AudioLatencyP99 time.Duration
}

// Between turns two Totals into a Window.
func Between(start time.Time, a, b Totals) Window {
	d := b.At.Sub(a.At)
	sec := d.Seconds()
	if sec <= 0 {
		sec = 1
	}
	rate := func(x, y uint64) float64 { return float64(y-x) / sec }
	w := Window{
		Elapsed: b.At.Sub(start), Duration: d,
		Connected: b.Connected, Participants: b.Participants, Reconnects: b.Reconnects - a.Reconnects,
		Joins: b.Joins - a.Joins, Signaling: b.Signaling.Sub(a.Signaling),
		TxKbps:             rate(a.TxAudioBytes+a.TxVideoBytes, b.TxAudioBytes+b.TxVideoBytes) * 8 / 1000,
		TxPacketsPerS:      rate(a.TxAudioPackets+a.TxVideoPackets, b.TxAudioPackets+b.TxVideoPackets),
		TxFramesPerS:       rate(a.TxFrames, b.TxFrames),
		RxKbps:             rate(a.RxAudioBytes+a.RxVideoBytes, b.RxAudioBytes+b.RxVideoBytes) * 8 / 1000,
		RxAudioPacketsPerS: rate(a.RxAudioPackets, b.RxAudioPackets),
		RxVideoPacketsPerS: rate(a.RxVideoPackets, b.RxVideoPackets),
		RxFramesPerS:       rate(a.RxFrames, b.RxFrames),
		RxAudioStreams:     b.RxAudioStreams, RxVideoStreams: b.RxVideoStreams,
		KeyframeRequests: b.KeyframeRequests - a.KeyframeRequests,
		NACKed:           b.NACKed - a.NACKed, Retransmitted: b.Retransmitted - a.Retransmitted,
		WaitingForKeyframe: b.WaitingForKeyframe, PausedPublishers: b.PausedPublishers,
	}
	if exp := b.RxExpected - a.RxExpected; exp > 0 && b.RxReceived-a.RxReceived < exp {
		w.LossPercent = 100 * float64(exp-(b.RxReceived-a.RxReceived)) / float64(exp)
	}
	waits := b.KeyframeWaits.Sub(a.KeyframeWaits)
	w.KeyframeWaits = waits.Count()
	w.KeyframeWaitP50, w.KeyframeWaitMax = waits.Quantile(0.5), waits.Max()
	if b.LongestWait > w.KeyframeWaitMax {
		w.KeyframeWaitMax = b.LongestWait
	}
	lat := b.AudioLatency.Sub(a.AudioLatency)
	w.AudioLatencyP50, w.AudioLatencyP99 = lat.Quantile(0.5), lat.Quantile(0.99)
	return w
}

// Header is the column line for Window.Line.
func Header() string {
	return fmt.Sprintf("%7s %7s %9s %7s %9s %6s %6s %7s %7s %6s %5s %5s %5s %9s %9s",
		"time", "joined", "tx kb/s", "tx fps", "rx kb/s", "rx a", "rx v", "rx fps", "rx pps", "loss%", "nack", "pli", "kfw", "kfw max", "a p99")
}

// Line is the window as one row under Header.
func (w Window) Line() string {
	return fmt.Sprintf("%6.0fs %3d/%-3d %9.0f %7.0f %9.0f %6d %6d %7.0f %7.0f %6.2f %5d %5d %5d %9s %9s",
		w.Elapsed.Seconds(), w.Connected, w.Participants, w.TxKbps, w.TxFramesPerS, w.RxKbps,
		w.RxAudioStreams, w.RxVideoStreams, w.RxFramesPerS, w.RxAudioPacketsPerS+w.RxVideoPacketsPerS,
		w.LossPercent, w.NACKed, w.KeyframeRequests, w.KeyframeWaits, ms(w.KeyframeWaitMax), ms(w.AudioLatencyP99))
}

// Summary is a multi-line description of a whole window.
func (w Window) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "participants         %d joined of %d, %d reconnects\n", w.Connected, w.Participants, w.Reconnects)
	fmt.Fprintf(&b, "sent                 %.0f kb/s, %.0f packets/s, %.0f video frames/s\n", w.TxKbps, w.TxPacketsPerS, w.TxFramesPerS)
	fmt.Fprintf(&b, "received             %.0f kb/s, %.0f audio + %.0f video packets/s, %.0f video frames/s\n",
		w.RxKbps, w.RxAudioPacketsPerS, w.RxVideoPacketsPerS, w.RxFramesPerS)
	fmt.Fprintf(&b, "streams              %d audio, %d video active at the end\n", w.RxAudioStreams, w.RxVideoStreams)
	fmt.Fprintf(&b, "loss                 %.3f %% after retransmission; %d NACKed, %d retransmitted by publishers\n", w.LossPercent, w.NACKed, w.Retransmitted)
	fmt.Fprintf(&b, "keyframes            %d requests to publishers; %d waits, median %s, max %s\n",
		w.KeyframeRequests, w.KeyframeWaits, ms(w.KeyframeWaitP50), ms(w.KeyframeWaitMax))
	fmt.Fprintf(&b, "audio end to end     p50 %s, p99 %s (sender write → receiver read, through the SFU)\n", ms(w.AudioLatencyP50), ms(w.AudioLatencyP99))
	fmt.Fprintf(&b, "signaling            %.0f messages/s, %.1f kB/s received by all participants\n",
		float64(w.Signaling.Messages)/w.Duration.Seconds(), float64(w.Signaling.Bytes)/1000/w.Duration.Seconds())
	return b.String()
}

func ms(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1fms", float64(d)/1e6)
}

// Report calls f with each window of length every until ctx ends, and returns
// the last totals it read (before ctx ended, so before participants left).
func (r *Run) Report(ctx context.Context, every time.Duration, f func(Window)) Totals {
	tick := time.NewTicker(every)
	defer tick.Stop()
	prev := r.Totals()
	for {
		select {
		case <-ctx.Done():
			return prev
		case <-tick.C:
			cur := r.Totals()
			f(Between(r.start, prev, cur))
			prev = cur
		}
	}
}

// Started is when the run began.
func (r *Run) Started() time.Time { return r.start }

// Reception is what one participant gets from one source at one moment: a
// stream of that kind with a packet within the last activeWindow.
type Reception struct {
	Receiver string // participant names (ParticipantSpec.Name)
	Source   string
	Kind     string // "audio" or "video"
	Height   int    // video: the frame height of the newest keyframe (0 before one)
	// Packets and Bytes (RTP header and payload) the stream brought so far;
	// Expected and Received, its sequence numbers spanned and counted (loss).
	Packets, Bytes     uint64
	Expected, Received uint64
}

// Receptions lists what every participant is receiving now, one entry per
// receiver, source and kind (the newest stream where a reconnection left two).
func (r *Run) Receptions() []Reception { return r.receptions(true) }

// Streams is Receptions with the streams idle now too (paused, or out of
// Last N): with Packets and Bytes, what each brought over a window.
func (r *Run) Streams() []Reception { return r.receptions(false) }

func (r *Run) receptions(activeOnly bool) []Reception {
	now := time.Now().UnixNano()
	type key struct{ recv, src, kind string }
	newest := map[key]int64{}
	var out []Reception
	index := map[key]int{}
	r.tracksMu.Lock()
	defer r.tracksMu.Unlock()
	for _, p := range r.parts {
		for _, x := range p.recv.tracks {
			last := x.last.Load()
			if activeOnly && now-last >= int64(activeWindow) {
				continue
			}
			k := key{p.spec.Name, r.nameOf(x.source), "audio"}
			if x.video {
				k.kind = "video"
			}
			rec := Reception{Receiver: k.recv, Source: k.src, Kind: k.kind, Packets: x.packets.Load(), Bytes: x.bytes.Load(),
				Expected: x.expected.Load(), Received: x.received.Load()}
			if x.video {
				rec.Height = int(x.height.Load())
			}
			if i, ok := index[k]; ok {
				if last > newest[k] {
					out[i], newest[k] = rec, last
				}
				continue
			}
			index[k], newest[k] = len(out), last
			out = append(out, rec)
		}
	}
	return out
}

// nameOf is the name of the participant with this id, or the id itself when
// it is none of ours.
func (r *Run) nameOf(id string) string {
	if v, ok := r.byID.Load(id); ok {
		return v.(*participant).spec.Name
	}
	return id
}
