package broadcast

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/forward"
	"github.com/podium-sfu/podium/internal/room"
)

// endpoint is what a WHIP publisher and a WHEP player share: one peer
// connection, a place in a room, and an end that comes from DELETE, the
// connection failing, or the room removing it.
type endpoint struct {
	id      string
	self    room.Member // the publisher or viewer embedding this
	hub     *room.Hub
	room    *room.Room
	pc      *webrtc.PeerConnection
	log     *slog.Logger
	ctx     context.Context // ends when the endpoint closes
	cancel  context.CancelFunc
	tracks  sync.WaitGroup // goroutines that call the room
	once    sync.Once
	onClose func() // drops the resource from the handler's table

	mu     sync.Mutex // guards closed against goTrack
	closed bool
}

func (e *endpoint) setup(id string, self room.Member, hub *room.Hub, pc *webrtc.PeerConnection, log *slog.Logger) {
	e.id, e.self, e.hub, e.pc, e.log = id, self, hub, pc, log
	e.ctx, e.cancel = context.WithCancel(context.Background())
}

// goTrack runs f as a goroutine close waits for, unless the endpoint is closing.
func (e *endpoint) goTrack(f func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return
	}
	e.tracks.Add(1)
	go func() { defer e.tracks.Done(); f() }()
}

func (e *endpoint) ID() string                              { return e.id }
func (e *endpoint) Replaced()                               { go e.close("replaced") }
func (e *endpoint) RTT() (publish, subscribe time.Duration) { return 0, 0 }
func (e *endpoint) Remove(_, reason string)                 { go e.close("removed: " + reason) }
func (e *endpoint) Failed(reason string)                    { go e.close("failed: " + reason) }

// Link is nil: layers follow what the endpoint asks for, not a bandwidth estimate.
func (e *endpoint) Link() *forward.Link { return nil }

// watch ends the endpoint when its connection fails or closes, or when it has
// not connected within connectTimeout.
func (e *endpoint) watch(connectTimeout time.Duration) {
	connected := make(chan struct{})
	var once sync.Once
	e.pc.OnConnectionStateChange(func(st webrtc.PeerConnectionState) {
		switch st {
		case webrtc.PeerConnectionStateConnected:
			e.log.Info("connected")
			once.Do(func() { close(connected) })
		case webrtc.PeerConnectionStateFailed, webrtc.PeerConnectionStateClosed:
			go e.close("connection " + st.String())
		}
	})
	go func() {
		t := time.NewTimer(connectTimeout)
		defer t.Stop()
		select {
		case <-connected:
		case <-e.ctx.Done():
		case <-t.C:
			e.close("not connected within " + connectTimeout.String())
		}
	}()
}

// close leaves the room and closes the connection, once; it waits for the
// goroutines that call the room, so never call it from the room's loop.
func (e *endpoint) close(cause string) {
	e.once.Do(func() {
		e.cancel()
		e.mu.Lock()
		e.closed = true
		e.mu.Unlock()
		_ = e.pc.Close()
		e.tracks.Wait()
		if e.room != nil {
			e.hub.Leave(e.room, e.self)
		}
		if e.onClose != nil {
			e.onClose()
		}
		e.log.Info("ended", "cause", cause)
	})
}

// answer applies offer and returns the complete answer, ICE candidates
// included (no trickle: RFC 9725 allows it).
func answer(ctx context.Context, pc *webrtc.PeerConnection, offer string) (string, error) {
	if err := pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeOffer, SDP: offer}); err != nil {
		return "", err
	}
	ans, err := pc.CreateAnswer(nil)
	if err != nil {
		return "", err
	}
	gathered := webrtc.GatheringCompletePromise(pc)
	if err := pc.SetLocalDescription(ans); err != nil {
		return "", err
	}
	select {
	case <-gathered:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	return pc.LocalDescription().SDP, nil
}
