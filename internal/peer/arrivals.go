package peer

import (
	"encoding/binary"
	"sync"
	"sync/atomic"
	"time"

	"github.com/podium-sfu/podium/internal/media"
)

// arrivals records, for the media we receive, when each packet carrying a
// transport-wide sequence number came off the UDP socket, for the feedback
// recorder of the connection it belongs to.
//
// The sender's congestion control reads our feedback as the path's delay and
// loss. Recording when a stream's reader gets to a packet instead (as pion's
// interceptor does) measures our goroutine scheduling: every SSRC has its own
// reader, so under CPU load packets are recorded late and out of send order,
// and a feedback built in between reports the late ones lost. Measured with
// three browsers on two cores: 2–15 % of loopback packets reported lost,
// which the senders' estimators take for congestion; 0–2 % from the socket.
//
// SRTP leaves the RTP header in the clear, so the socket reader can read the
// SSRC and the extension before the packet is authenticated, and so can
// anyone who forges one: a forged packet with a known SSRC and the number of a
// packet that was lost would hide that loss from the sender. So the socket
// only stamps the arrival; it counts once the stream's reader got the packet
// through SRTP authentication (feedbackRecorder). The data plane, which
// authenticates a taken stream's packets at the socket, does both at once
// after authentication (record), so its forgeries never reach the recorder.
type arrivals struct {
	streams atomic.Pointer[map[uint32]arrivalStream] // by SSRC; copy-on-write
	mu      sync.Mutex                               // serializes writers of streams
}

type arrivalStream struct {
	extID uint8 // the transport-wide sequence number's extension id
	fb    *feedbackRecorder
}

func newArrivals() *arrivals {
	a := &arrivals{}
	a.streams.Store(&map[uint32]arrivalStream{})
	return a
}

// Observe stamps datagram b, read from the socket at now, if it is an RTP
// packet of a registered stream with a transport-wide sequence number. It does
// not allocate and takes only the owning connection's lock.
func (a *arrivals) Observe(b []byte, now time.Time) {
	if !media.IsRTP(b) {
		return
	}
	ssrc := binary.BigEndian.Uint32(b[8:])
	s, ok := (*a.streams.Load())[ssrc]
	if !ok {
		return
	}
	seq, ok := transportSeq(b, s.extID)
	if !ok {
		return
	}
	s.fb.stamp(ssrc, seq, now)
}

// transportSeq reads the transport-wide sequence number of RTP packet b,
// SRTP-protected or not (the header is in the clear; the padding is not).
func transportSeq(b []byte, extID uint8) (uint16, bool) {
	var h media.RTPHeader
	if media.ParseSRTPHeader(b, &h) != nil {
		return 0, false
	}
	ext, ok := media.FindExtension(b, &h, extID)
	if !ok || len(ext) < 2 {
		return 0, false
	}
	return binary.BigEndian.Uint16(ext), true
}

// record counts plain RTP packet b, which the data plane authenticated at the
// socket at now, for its connection's feedback at arrived, when it reached
// the host: a stamp and its confirmation at once (pion's path stamps in
// Observe and confirms in the stream's reader, see
// twccFeedback.BindRemoteStream).
func (a *arrivals) record(b []byte, arrived, now time.Time) {
	if len(b) < 12 {
		return
	}
	ssrc := binary.BigEndian.Uint32(b[8:])
	s, ok := (*a.streams.Load())[ssrc]
	if !ok {
		return
	}
	if seq, ok := transportSeq(b, s.extID); ok {
		s.fb.arrivedAuthenticated(ssrc, seq, arrived, now)
	}
}

func (a *arrivals) add(ssrc uint32, s arrivalStream) {
	a.mu.Lock()
	defer a.mu.Unlock()
	cur := *a.streams.Load()
	next := make(map[uint32]arrivalStream, len(cur)+1)
	for k, v := range cur {
		next[k] = v
	}
	next[ssrc] = s
	a.streams.Store(&next)
}

// remove forgets ssrc if it still belongs to fb (a stream of another
// connection may have reused it since).
func (a *arrivals) remove(ssrc uint32, fb *feedbackRecorder) {
	a.mu.Lock()
	defer a.mu.Unlock()
	cur := *a.streams.Load()
	if s, ok := cur[ssrc]; !ok || s.fb != fb {
		return
	}
	next := make(map[uint32]arrivalStream, len(cur))
	for k, v := range cur {
		if k != ssrc {
			next[k] = v
		}
	}
	a.streams.Store(&next)
}

const (
	// pendingArrivals bounds the socket stamps waiting for their packet's
	// authentication: readers lag by milliseconds, in which a connection
	// receives tens of packets.
	pendingArrivals = 512
	// authWait is how long a stamp waits for its packet to pass SRTP
	// authentication before it is dropped as forged: longer than a reader
	// lags under load (40 ms measured). The wait only matters for a stamp
	// whose stream sends nothing after it; otherwise the stream's next
	// authenticated packet settles it at once.
	authWait = 100 * time.Millisecond
)

// pendingArrival is a socket stamp of a packet not yet recorded.
type pendingArrival struct {
	at    time.Time
	ssrc  uint32
	seq   uint16
	state uint8
}

const (
	waiting       = iota // for its packet's authentication
	authenticated        // counts, at its socket time
	forged               // its packet failed authentication, or never was read
)

// feedbackRecorder is one connection's transport-wide feedback state: a
// twccRecorder (the arrival map and the feedback encoding, pion's and
// libwebrtc's), fed in arrival order with socket times, with authenticated
// packets only.
//
// The socket stamps each packet (stamp); its stream's reader, which gets
// only packets that passed SRTP authentication, confirms it (authenticated).
// Stamps go to the Recorder in arrival order once confirmed, so a reader
// lagging behind another stream's never makes its packets look lost. A
// stamp still waiting holds the later ones back until authWait, except that
// one of a stream whose later packet was confirmed is forged: each stream's
// reader gets its packets in arrival order.
type feedbackRecorder struct {
	mu      sync.Mutex
	rec     *twccRecorder
	start   time.Time // the zero of arrival times
	pending [pendingArrivals]pendingArrival
	head, n int // pending[head] is the oldest of n
}

func newFeedbackRecorder(start time.Time) *feedbackRecorder {
	return &feedbackRecorder{rec: newTWCCRecorder(), start: start}
}

// stamp notes that a packet of ssrc with transport-wide seq reached the socket
// at at; it counts once authenticated.
func (f *feedbackRecorder) stamp(ssrc uint32, seq uint16, at time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pushLocked(pendingArrival{at: at, ssrc: ssrc, seq: seq})
}

// arrivedAuthenticated records the packet of ssrc with transport-wide seq
// that reached the socket at at and passed SRTP authentication there: at once
// when no stamp waits ahead of it, else behind the stamps that wait for pion's
// readers, in arrival order. A stamp of its stream still waiting ahead of it
// is forged, as in authenticated (from another address: pion's path).
func (f *feedbackRecorder) arrivedAuthenticated(ssrc uint32, seq uint16, at, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == 0 {
		f.recordLocked(ssrc, seq, at)
		return
	}
	f.forgeWaitingLocked(ssrc, f.n)
	f.pushLocked(pendingArrival{at: at, ssrc: ssrc, seq: seq, state: authenticated})
	f.flushLocked(now)
}

// authenticated records the packet of ssrc with transport-wide seq that its
// stream's reader got through SRTP authentication at now: at the time the
// socket stamped it, or at now when the socket did not see it (ICE-TCP).
func (f *feedbackRecorder) authenticated(ssrc uint32, seq uint16, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	match := -1
	for i := range f.n {
		if p := &f.pending[(f.head+i)%len(f.pending)]; p.state == waiting && p.ssrc == ssrc && p.seq == seq {
			match = i // the latest: a forgery sent ahead of the packet loses
		}
	}
	if match < 0 {
		f.recordLocked(ssrc, seq, now)
	} else {
		f.forgeWaitingLocked(ssrc, match)
		f.pending[(f.head+match)%len(f.pending)].state = authenticated
	}
	f.flushLocked(now)
}

// pushLocked queues a stamp behind the others; full of stamps nobody
// confirms, the oldest goes first.
func (f *feedbackRecorder) pushLocked(p pendingArrival) {
	if f.n == len(f.pending) {
		f.popLocked()
	}
	f.pending[(f.head+f.n)%len(f.pending)] = p
	f.n++
}

// forgeWaitingLocked marks the stamps of ssrc still waiting among the oldest
// n forged: its packets are authenticated in arrival order, so one waiting
// ahead of a later authentic packet never will be.
func (f *feedbackRecorder) forgeWaitingLocked(ssrc uint32, n int) {
	for i := range n {
		if p := &f.pending[(f.head+i)%len(f.pending)]; p.state == waiting && p.ssrc == ssrc {
			p.state = forged
		}
	}
}

// flushLocked records the confirmed stamps in arrival order, up to the first
// that still waits less than authWait.
func (f *feedbackRecorder) flushLocked(now time.Time) {
	for f.n > 0 {
		if p := &f.pending[f.head]; p.state == waiting && now.Sub(p.at) < authWait {
			return
		}
		f.popLocked()
	}
}

// popLocked takes the oldest stamp off, recording it if it was confirmed.
func (f *feedbackRecorder) popLocked() {
	p := f.pending[f.head]
	if p.state == authenticated {
		f.recordLocked(p.ssrc, p.seq, p.at)
	}
	f.head = (f.head + 1) % len(f.pending)
	f.n--
}

func (f *feedbackRecorder) recordLocked(ssrc uint32, seq uint16, at time.Time) {
	f.rec.Record(ssrc, seq, at.Sub(f.start).Microseconds())
}

// build appends to dst the feedback packets, from sender, on what was
// recorded since the last call.
func (f *feedbackRecorder) build(now time.Time, dst []byte, sender uint32) []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.flushLocked(now)
	return f.rec.AppendFeedback(dst, sender)
}
