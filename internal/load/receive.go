package load

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/media"
)

// rxTrack counts one received track. Its reader is the only writer; the
// reporter reads the atomics at any time.
type rxTrack struct {
	source string
	video  bool

	packets, bytes    atomic.Uint64
	frames, keyframes atomic.Uint64
	expected          atomic.Uint64 // sequence numbers spanned so far
	received          atomic.Uint64 // packets counted towards expected
	last              atomic.Int64  // unix nanos of the newest packet
	height            atomic.Int32  // video: frame height of the newest keyframe (0 before one)

	// Owned by the reader.
	started bool
	highest uint64 // extended highest sequence number
	base    uint64
}

// maxSeqJump is the largest forward gap counted as loss.
const maxSeqJump = 3000

// seq accounts one sequence number (RFC 3550 appendix A.1, without probation).
func (t *rxTrack) seq(s uint16) {
	if !t.started {
		t.started = true
		t.highest = 1<<16 + uint64(s)
		t.base = t.highest
		t.expected.Store(1)
		t.received.Store(1)
		return
	}
	ext := t.highest + uint64(int64(int16(s-uint16(t.highest))))
	if ext > t.highest {
		if ext-t.highest > maxSeqJump { // a new numbering, not loss
			t.base += ext - t.highest - 1
		}
		t.highest = ext
		t.expected.Store(t.highest - t.base + 1)
	}
	t.received.Add(1)
}

// receiver counts what one participant receives.
type receiver struct {
	run *Run

	tracks []*rxTrack // guarded by run.tracksMu
	slots  slotMap    // whom its audio slots carry, and what they brought (slots.go)

	mu      sync.Mutex
	waiting map[string]time.Time // source → when its video was announced, until its first keyframe
}

func newReceiver(r *Run) *receiver {
	return &receiver{run: r, waiting: map[string]time.Time{}}
}

// forwarded notes the sources whose video the SFU just started sending us: the
// time until each one's first keyframe is a keyframe wait.
func (r *receiver) forwarded(ids []string, before []string, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	was := map[string]bool{}
	for _, id := range before {
		was[id] = true
	}
	keep := map[string]bool{}
	for _, id := range ids {
		keep[id] = true
		if !was[id] {
			if _, ok := r.waiting[id]; !ok {
				r.waiting[id] = now
			}
		}
	}
	for id := range r.waiting {
		if !keep[id] {
			delete(r.waiting, id) // no longer forwarded: not waiting any more
		}
	}
}

func (r *receiver) keyframe(source string, now time.Time) {
	r.mu.Lock()
	since, ok := r.waiting[source]
	if ok {
		delete(r.waiting, source)
	}
	r.mu.Unlock()
	if ok {
		r.run.keyframeWaits.Record(now.Sub(since))
	}
}

// waitingNow counts videos announced but without a keyframe yet, and the longest wait.
func (r *receiver) waitingNow(now time.Time) (n int, longest time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, since := range r.waiting {
		n++
		longest = max(longest, now.Sub(since))
	}
	return n, longest
}

// onTrack reads a received track until the connection closes (client.Options.OnTrack).
func (r *receiver) onTrack(track *webrtc.TrackRemote, _ *webrtc.RTPReceiver) {
	t := &rxTrack{source: track.StreamID(), video: track.Kind() == webrtc.RTPCodecTypeVideo}
	slot, isSlot := slotIndex(t.source)
	r.run.tracksMu.Lock()
	r.tracks = append(r.tracks, t)
	r.run.tracksMu.Unlock()
	defer func() {
		r.run.tracksMu.Lock()
		r.tracks = slices.DeleteFunc(r.tracks, func(x *rxTrack) bool { return x == t })
		r.run.retire(t)
		r.run.tracksMu.Unlock()
	}()
	buf := make([]byte, 1500)
	var h media.RTPHeader
	var d media.VP8Descriptor
	for {
		n, _, err := track.Read(buf)
		if err != nil {
			return
		}
		now := time.Now()
		if media.ParseRTPHeader(buf[:n], &h) != nil {
			continue
		}
		t.packets.Add(1)
		t.bytes.Add(uint64(n))
		t.last.Store(now.UnixNano())
		t.seq(h.SequenceNumber)
		if t.video {
			if h.Marker {
				t.frames.Add(1)
			}
			payload := buf[h.PayloadOffset:h.PayloadEnd]
			if media.ParseVP8(payload, &d) == nil && d.IsKeyframe() {
				t.keyframes.Add(1)
				// Switching encodings starts with a keyframe of the new one,
				// so the newest keyframe's size is the encoding we get.
				if _, height, ok := media.VP8KeyframeSize(payload, &d); ok {
					t.height.Store(int32(height))
				}
				r.keyframe(t.source, now)
			}
			continue
		}
		if isSlot { // its timestamps are the slot's, not the source's: no latency
			r.slots.credit(slot)
			continue
		}
		if src := r.run.sourceOf(t.source); src != nil {
			if at, ok := src.sent.sentAt(h.Timestamp); ok {
				r.run.audioLatency.Record(time.Duration(now.UnixNano() - at))
				r.run.audioLatencySum.Add(now.UnixNano() - at)
			}
		}
	}
}

// rxTotals are cumulative receive counters.
type rxTotals struct {
	AudioPackets, VideoPackets uint64
	AudioBytes, VideoBytes     uint64
	Frames, Keyframes          uint64
	Expected, Received         uint64
}

func (t *rxTotals) add(x *rxTrack) {
	p, b := x.packets.Load(), x.bytes.Load()
	if x.video {
		t.VideoPackets += p
		t.VideoBytes += b
	} else {
		t.AudioPackets += p
		t.AudioBytes += b
	}
	t.Frames += x.frames.Load()
	t.Keyframes += x.keyframes.Load()
	t.Expected += x.expected.Load()
	t.Received += x.received.Load()
}
