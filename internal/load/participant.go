package load

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/client"
	"github.com/podium-sfu/podium/internal/signal"
)

// participant is one synthetic endpoint: it joins, publishes its source (if
// any), receives and counts everything the SFU sends, follows the SFU's pause
// and layers messages, and rejoins when the connection ends.
type participant struct {
	run   *Run
	spec  ParticipantSpec
	snd   *sender // nil for receive-only participants
	recv  *receiver
	api   *webrtc.API // nil: the run's (set when the participant has its own delay, or receives light)
	light *lightRx    // the light receive mode's counting (light.go); nil: pion receives

	sig *signalingCount // its URL's count (Run.SignalingByURL)

	connected  atomic.Bool
	reconnects atomic.Uint64
	joined     chan struct{} // closed at the first welcome
	joinOnce   sync.Once

	// Owned by the signaling reader of the current connection.
	forwarded []string

	ctl chan func(*client.Client) // work for the participant's goroutine, with its current client
}

func newParticipant(r *Run, spec ParticipantSpec, index int) (*participant, error) {
	p := &participant{run: r, spec: spec, joined: make(chan struct{}), ctl: make(chan func(*client.Client), 16)}
	p.recv = newReceiver(r)
	cfg, err := spec.sourceConfig(r.cfg.DTX)
	if err != nil {
		return nil, err
	}
	if cfg.Speech != nil || len(cfg.Video) > 0 {
		rng := rand.New(rand.NewPCG(r.cfg.Seed, uint64(index)))
		p.snd = newSender(newSource(cfg, time.Now(), rng))
	}
	return p, nil
}

// loop connects and reconnects until ctx ends.
func (p *participant) loop(ctx context.Context) {
	backoff := 250 * time.Millisecond
	first := true
	var resume *signal.Resume
	for ctx.Err() == nil {
		c, pub, err := p.dial(ctx, resume)
		if err != nil {
			p.run.dialErrors.Add(1)
			p.run.noteError(err)
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 5*time.Second)
			continue
		}
		p.run.joins.Add(1)
		if !first {
			p.reconnects.Add(1)
		}
		first = false
		st := c.Snapshot()
		resume = &st.Resume
		p.run.register(st.ID, p)
		p.connected.Store(true)
		p.joinOnce.Do(func() { close(p.joined) })
		p.sendSettings(c, st.Participants)
		since := time.Now()
		p.serve(ctx, c)
		// A connection refused right after joining (say, a fatal error) is
		// retried with growing backoff, a long-lived one at once.
		if time.Since(since) > 10*time.Second {
			backoff = 250 * time.Millisecond
		} else {
			backoff = min(2*backoff, 5*time.Second)
		}
		p.connected.Store(false)
		p.run.unregister(st.ID, p)
		c.Close() // the reader is done: forwarded is ours again
		p.recv.forwarded(nil, p.forwarded, time.Now())
		p.forwarded = nil
		if p.light != nil {
			p.light.reset()
		}
		if pub != nil {
			pub.close()
			p.snd.post(func(src *source) {
				if src.out == pub {
					src.bind(nil)
				}
			})
		}
		if ctx.Err() == nil && backoff > 250*time.Millisecond {
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			}
		}
	}
}

func (p *participant) dial(ctx context.Context, resume *signal.Resume) (*client.Client, *pubConn, error) {
	var pub *pubConn
	opts := client.Options{
		URL: cmp.Or(p.spec.URL, p.run.cfg.URL), Room: p.run.cfg.Room + p.spec.Room, Name: p.spec.Name, Token: p.run.cfg.Token,
		Resume: resume, OnTrack: p.recv.onTrack, OnMessage: p.onMessage, API: cmp.Or(p.api, p.run.api),
		// With nothing to publish it joins as audience: no publish connection
		// at either end, and no state for it at the other participants.
		Audience:   p.snd == nil,
		AudioSlots: p.run.cfg.AudioSlots,
	}
	if p.snd != nil {
		// The connection's stream id is our participant id, known after welcome;
		// the SFU names forwarded streams itself, so any id does here.
		pub = newPubConn(p.snd, p.spec.Name)
		opts.Media = pub
	}
	dctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	c, err := client.Dial(dctx, opts)
	if err != nil {
		return nil, nil, err
	}
	return c, pub, nil
}

// serve waits until the connection ends (closed, bye, a fatal error) or ctx ends,
// running queued work meanwhile.
func (p *participant) serve(ctx context.Context, c *client.Client) {
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		_ = c.Wait(ctx, func(s *client.State) bool {
			if s.Closed != nil || s.Bye != "" {
				return true
			}
			for _, e := range s.Errors {
				if e.Fatal {
					return true
				}
			}
			return false
		})
	}()
	for {
		select {
		case <-ended:
			return
		case f := <-p.ctl:
			f(c)
		}
	}
}

// do queues f to run with the current client.
func (p *participant) do(f func(*client.Client)) {
	select {
	case p.ctl <- f:
	default:
	}
}

// sendSettings tells the SFU what we show: every other participant's video at
// the spec's size.
func (p *participant) sendSettings(c *client.Client, others map[string]signal.Participant) {
	if p.spec.View.Width == 0 || len(others) == 0 {
		return
	}
	videos := map[string]signal.VideoConstraint{}
	for id, o := range others {
		if o.Audience {
			continue // it sends no video
		}
		videos[id] = signal.VideoConstraint{Width: p.spec.View.Width, Height: p.spec.View.Height, Role: p.spec.View.Role}
	}
	if len(videos) == 0 {
		return
	}
	_ = c.Send(signal.TypeConstraints, signal.Constraints{Videos: videos})
}

// onMessage follows the SFU's instructions (client.Options.OnMessage); it runs
// on the client's reader and never blocks.
func (p *participant) onMessage(typ string, frame []byte) {
	p.run.signaling.count(typ, len(frame))
	if p.sig != nil {
		p.sig.count(typ, len(frame))
	}
	switch typ {
	case signal.TypePauseVideo, signal.TypeResumeVideo:
		if p.snd != nil {
			pause := typ == signal.TypePauseVideo
			p.snd.post(func(src *source) { src.setPaused(pause) })
		}
	case signal.TypeLayers:
		var m signal.Layers
		if json.Unmarshal(frame, &m) == nil && p.snd != nil {
			p.snd.post(func(src *source) { src.setLayers(m.Active) })
		}
	case signal.TypeForwarded:
		var m signal.Forwarded
		if json.Unmarshal(frame, &m) == nil && p.light == nil { // light: no keyframes seen, so no waits
			p.recv.forwarded(m.IDs, p.forwarded, time.Now())
			p.forwarded = m.IDs
		}
	case signal.TypeOffer:
		var m signal.SDP
		if p.light != nil && json.Unmarshal(frame, &m) == nil && m.PC == signal.PCSubscribe {
			p.light.learn(m.SDP)
		}
	case signal.TypeAudioSlots:
		var m signal.AudioSlots
		if json.Unmarshal(frame, &m) == nil {
			p.recv.slots.set(m.IDs)
		}
	case signal.TypeParticipants:
		var d signal.ParticipantDiff
		if json.Unmarshal(frame, &d) == nil && len(d.Participants) > 0 {
			others := map[string]signal.Participant{}
			for _, o := range d.Participants {
				others[o.ID] = o
			}
			p.do(func(c *client.Client) { p.sendSettings(c, others) })
		}
	case signal.TypeError:
		var e signal.Error
		if json.Unmarshal(frame, &e) == nil {
			p.run.noteError(fmt.Errorf("%s: %s: %s", p.spec.Name, e.Code, e.Message))
		}
	}
}

// setSpeaking switches the participant's microphone between speech and silence.
func (p *participant) setSpeaking(on bool) {
	if p.snd != nil {
		p.snd.post(func(src *source) { src.setSpeaking(on) })
	}
}

func (p *participant) stop() {
	if p.snd != nil {
		p.snd.stop()
	}
}

var errNotConnected = errors.New("load: no participant is connected")
