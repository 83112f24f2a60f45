package peer

import (
	"encoding/binary"
	"log/slog"
	"math/rand/v2"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/interceptor"
	"github.com/pion/rtcp"
	"github.com/pion/sdp/v3"

	"github.com/podium-sfu/podium/internal/gridclock"
	"github.com/podium-sfu/podium/internal/wire"
)

// twccFeedbackInterval is how often a connection's transport-wide feedback is
// sent: libwebrtc's receivers send it every 50–250 ms, and the sender's
// estimate reacts no faster than its feedback.
const twccFeedbackInterval = 50 * time.Millisecond

// twccFeedbackFactory makes, for each publish connection, the interceptor that
// sends transport-wide congestion control feedback for the media it receives,
// with arrival times taken at the socket (see arrivals).
type twccFeedbackFactory struct {
	arrivals *arrivals

	mu sync.Mutex
	// byPC: the interceptors made, by peer connection id, until
	// Engine.Publish gives theirs a route (nil: two connections had one id).
	byPC map[string]*twccFeedback
}

func (f *twccFeedbackFactory) NewInterceptor(id string) (interceptor.Interceptor, error) {
	pionSSRC := rand.Uint32()
	t := &twccFeedback{
		arrivals: f.arrivals,
		fb:       newFeedbackRecorder(time.Now()),
		factory:  f,
		id:       id,
		pionSSRC: pionSSRC,
		ownSSRC:  pionSSRC ^ (1 + rand.Uint32N(1<<32-1)), // never pionSSRC
		closed:   make(chan struct{}),
	}
	t.pionPkts = []rtcp.Packet{&t.raw}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.byPC == nil {
		f.byPC = map[string]*twccFeedback{}
	}
	if _, dup := f.byPC[id]; dup {
		f.byPC[id] = nil // neither gets a route: both stay on pion's path
	} else {
		f.byPC[id] = t
	}
	return t, nil
}

// route lets the feedback of connection id seal and send its feedback itself
// on r (see twccFeedback.send).
func (f *twccFeedbackFactory) route(id string, r *wire.Route) {
	f.mu.Lock()
	t := f.byPC[id]
	delete(f.byPC, id)
	f.mu.Unlock()
	if t != nil {
		t.route.Store(r)
	}
}

func (f *twccFeedbackFactory) forget(t *twccFeedback) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if cur, ok := f.byPC[t.id]; ok && (cur == t || cur == nil) {
		delete(f.byPC, t.id)
	}
}

type twccFeedback struct {
	interceptor.NoOp
	arrivals *arrivals
	fb       *feedbackRecorder
	factory  *twccFeedbackFactory
	id       string

	// The sending loop's: the feedback packets (reused), and the two ways
	// out. Our own (the connection's route: keys and a UDP pair of ours)
	// seals them with a sealer of our own, under ownSSRC, and sends them on
	// the socket; pion's (before the keys, ICE-TCP, WHIP, modes without the
	// receive half) writes them to its SRTCP session under pionSSRC. Each
	// SSRC's SRTCP index is followed by one context.
	route    atomic.Pointer[wire.Route]
	buf      []byte
	pionSSRC uint32
	raw      rtcp.RawPacket
	pionPkts []rtcp.Packet // &raw
	ownSSRC  uint32
	keys     *wire.Keys // seal's
	seal     *wire.RTCPSealer
	out      *wire.Batch

	mu     sync.Mutex
	ssrcs  []uint32 // registered with arrivals
	loop   bool
	closed chan struct{}
	wg     sync.WaitGroup // pionSends
	kick   chan struct{}  // the clock to pionSends
	// sendMu: one send at a time (the clock's own or pionSends'), so the
	// buffers above have one user.
	sendMu sync.Mutex
}

// BindRTCPWriter starts sending the connection's feedback.
func (t *twccFeedback) BindRTCPWriter(w interceptor.RTCPWriter) interceptor.RTCPWriter {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.loop || isClosed(t.closed) {
		return w
	}
	t.loop = true
	t.kick = make(chan struct{}, 1)
	t.wg.Add(1)
	go t.pionSends(w)
	gridclock.Shared.Add(t, gridclock.OnGrid(time.Now(), twccFeedbackInterval))
	return w
}

// pionSends sends the feedback when the clock asks it to (kick) while the
// connection has no route of ours: pion's RTCP writer may block (ICE-TCP), so
// it blocks this connection's goroutine, never the clock.
func (t *twccFeedback) pionSends(w interceptor.RTCPWriter) {
	defer t.wg.Done()
	for {
		select {
		case <-t.closed:
			return
		case <-t.kick:
			t.sendMu.Lock()
			t.send(time.Now(), w)
			t.sendMu.Unlock()
		}
	}
}

// Step is the shared clock's turn for t at now (gridclock.Shared, on the
// twccFeedbackInterval grid with the pacers': one wake-up per interval for
// the whole server rather than one per publish connection): sent at once on
// our own route (a non-blocking system call), else handed to pionSends. A
// send still under way skips the turn.
func (t *twccFeedback) Step(now time.Time) (time.Duration, bool) {
	if !t.sendMu.TryLock() {
		return twccFeedbackInterval, true
	}
	defer t.sendMu.Unlock()
	if d, ok := t.ownDest(); ok {
		t.sendOwn(now, d)
		return twccFeedbackInterval, true
	}
	select {
	case t.kick <- struct{}{}:
	default:
	}
	return twccFeedbackInterval, true
}

// StepPanicked: a feedback that panicked sends no more; its connection goes on.
func (t *twccFeedback) StepPanicked(r any) {
	slog.Error("transport-wide feedback stopped: its step panicked", "pc", t.id, "panic", r, "stack", string(debug.Stack()))
}

// send builds the feedback on what arrived since the last call and sends it,
// sealed by us on the connection's route when it has one, else by pion's
// SRTCP session through w. Our own way allocates nothing.
func (t *twccFeedback) send(now time.Time, w interceptor.RTCPWriter) {
	if d, ok := t.ownDest(); ok {
		t.sendOwn(now, d)
		return
	}
	if t.buf = t.fb.build(now, t.buf[:0], t.pionSSRC); len(t.buf) > 0 {
		t.raw = t.buf
		_, _ = w.Write(t.pionPkts, nil) // a failed write is a closing connection
	}
}

// ownDest is where our own way sends, when the connection has a route of
// ours with keys we can seal with.
func (t *twccFeedback) ownDest() (*wire.Dest, bool) {
	r := t.route.Load()
	mode, keys := r.Decide() // Pion when r is nil
	if mode != wire.Own {
		return nil, false
	}
	d := r.Dest()
	if d == nil || !t.keyed(keys) {
		return nil, false
	}
	return d, true
}

// sendOwn builds the feedback, seals it and sends it to d.
func (t *twccFeedback) sendOwn(now time.Time, d *wire.Dest) {
	t.buf = t.fb.build(now, t.buf[:0], t.ownSSRC)
	for b := t.buf; len(b) >= 4; {
		if t.out.Free() == 0 {
			t.out.Flush()
		}
		n := min(4*(int(binary.BigEndian.Uint16(b[2:]))+1), len(b))
		if sealed, err := t.seal.Seal(t.out.Slot(), b[:n]); err == nil {
			t.out.Commit(len(sealed), d)
		}
		b = b[n:]
	}
	t.out.Flush()
}

// keyed makes sure the sealer is keys'.
func (t *twccFeedback) keyed(keys *wire.Keys) bool {
	if t.keys == keys {
		return true
	}
	seal, err := keys.RTCPSealer()
	if err != nil {
		return false
	}
	t.keys, t.seal = keys, seal
	if t.out == nil {
		t.out = wire.NewBatch(4) // a feedback is one packet but after a pause
	}
	return true
}

// BindRemoteStream registers a received stream with the socket's arrivals; its
// reader, which gets only packets that passed SRTP authentication, makes them
// count (at the socket's time, or its own where the socket does not see them:
// ICE-TCP).
func (t *twccFeedback) BindRemoteStream(info *interceptor.StreamInfo, reader interceptor.RTPReader) interceptor.RTPReader {
	var extID uint8
	for _, e := range info.RTPHeaderExtensions {
		if e.URI == sdp.TransportCCURI {
			extID = uint8(e.ID) //nolint:gosec // negotiated ids are 1–255
			break
		}
	}
	if extID == 0 {
		return reader
	}
	t.mu.Lock()
	if isClosed(t.closed) {
		t.mu.Unlock()
		return reader
	}
	t.ssrcs = append(t.ssrcs, info.SSRC)
	t.mu.Unlock()
	t.arrivals.add(info.SSRC, arrivalStream{extID: extID, fb: t.fb})
	ssrc := info.SSRC
	return interceptor.RTPReaderFunc(func(b []byte, a interceptor.Attributes) (int, interceptor.Attributes, error) {
		n, a, err := reader.Read(b, a)
		if err == nil {
			if seq, ok := transportSeq(b[:n], extID); ok {
				t.fb.authenticated(ssrc, seq, time.Now())
			}
		}
		return n, a, err
	})
}

// UnbindRemoteStream forgets a stream that ended.
func (t *twccFeedback) UnbindRemoteStream(info *interceptor.StreamInfo) {
	t.arrivals.remove(info.SSRC, t.fb)
}

// Close stops the feedback and forgets the connection's streams.
func (t *twccFeedback) Close() error {
	t.mu.Lock()
	if !isClosed(t.closed) {
		close(t.closed)
	}
	ssrcs := t.ssrcs
	t.ssrcs = nil
	loop := t.loop
	t.mu.Unlock()
	if loop {
		gridclock.Shared.Remove(t) // none of its sends follows Close
	}
	t.wg.Wait()
	for _, ssrc := range ssrcs {
		t.arrivals.remove(ssrc, t.fb)
	}
	t.factory.forget(t)
	return nil
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
