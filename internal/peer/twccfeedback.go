package peer

import (
	"math/rand/v2"
	"sync"
	"time"

	"github.com/pion/interceptor"
	"github.com/pion/sdp/v3"
)

// twccFeedbackInterval is how often a connection's transport-wide feedback is
// sent: libwebrtc's receivers send it every 50–250 ms, and the sender's
// estimate reacts no faster than its feedback.
const twccFeedbackInterval = 50 * time.Millisecond

// twccFeedbackFactory makes, for each publish connection, the interceptor that
// sends transport-wide congestion control feedback for the media it receives,
// with arrival times taken at the socket (see arrivals).
type twccFeedbackFactory struct{ arrivals *arrivals }

func (f twccFeedbackFactory) NewInterceptor(string) (interceptor.Interceptor, error) {
	return &twccFeedback{
		arrivals: f.arrivals,
		fb:       newFeedbackRecorder(rand.Uint32(), time.Now()),
		closed:   make(chan struct{}),
	}, nil
}

type twccFeedback struct {
	interceptor.NoOp
	arrivals *arrivals
	fb       *feedbackRecorder

	mu     sync.Mutex
	ssrcs  []uint32 // registered with arrivals
	loop   bool
	closed chan struct{}
	wg     sync.WaitGroup
}

// BindRTCPWriter starts sending the connection's feedback.
func (t *twccFeedback) BindRTCPWriter(w interceptor.RTCPWriter) interceptor.RTCPWriter {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.loop || isClosed(t.closed) {
		return w
	}
	t.loop = true
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		tick := time.NewTicker(twccFeedbackInterval)
		defer tick.Stop()
		for {
			select {
			case <-t.closed:
				return
			case <-tick.C:
				if pkts := t.fb.build(time.Now()); len(pkts) > 0 {
					_, _ = w.Write(pkts, nil) // a failed write is a closing connection
				}
			}
		}
	}()
	return w
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
	t.mu.Unlock()
	t.wg.Wait()
	for _, ssrc := range ssrcs {
		t.arrivals.remove(ssrc, t.fb)
	}
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
