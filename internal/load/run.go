// Package load is Podium's load generator: synthetic participants — Go WebRTC
// endpoints with real ICE, DTLS and SRTP, speaking the signaling protocol through
// internal/client — that publish pre-encoded Opus and VP8 (simulcast or single
// layer, internal/clip) paced like a real encoder, answer keyframe requests and
// NACKs, follow the SFU's pause-video and layers messages, and count what they
// receive. A Run drives any number of them against any Podium server, rejoins
// after disconnections (a server restart), and reports per-second figures.
package load

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/interceptor"
	"github.com/pion/interceptor/pkg/nack"
	"github.com/pion/interceptor/pkg/report"
	"github.com/pion/interceptor/pkg/twcc"
	"github.com/pion/logging"
	"github.com/pion/sdp/v3"
	"github.com/pion/webrtc/v4"

	"github.com/podium-sfu/podium/internal/client"
	"github.com/podium-sfu/podium/internal/latency"
)

// Config is one load run.
type Config struct {
	URL          string // the server's signaling WebSocket, ws://host:port/ws
	Room         string
	Token        string // for servers with access control
	Participants []ParticipantSpec
	Speech       string // SpeechPaper, SpeechRealistic or SpeechNone
	DTX          bool   // Opus discontinuous transmission while silent
	// NoNACK makes the receivers never ask for retransmissions (the Last N
	// paper's load endpoints did not). By default they NACK what they miss, as
	// browsers do.
	NoNACK bool
	// NoFeedback makes the receivers send no transport-wide congestion control
	// feedback (so the SFU's bandwidth estimate never climbs). By default they
	// send it every 100 ms, as browsers do. Tests of the benchmark's own
	// verification use it.
	NoFeedback bool
	Seed       uint64
	// JoinInterval spaces the joins (default 40 ms), as a burst of DTLS
	// handshakes would measure the handshakes rather than the forwarding.
	JoinInterval time.Duration
	// AudioSlots makes the participants play audio slots (slots.go).
	AudioSlots bool
	// Light makes the receive-only participants count RTP from the clear
	// header without decrypting it (light.go): many more fit on one box.
	Light bool
}

// Run is a running load.
type Run struct {
	cfg    Config
	api    *webrtc.API
	parts  []*participant
	start  time.Time
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	closeOnce sync.Once

	speakers []*participant // the participants with audio, in spec order
	speech   Speech

	byID sync.Map // participant id → *participant, for the current connections

	tracksMu sync.Mutex // guards every receiver's tracks and retired
	retired  rxTotals   // counts of tracks that ended (reconnects)

	keyframeWaits   latency.Histogram // forwarded announcement → first keyframe
	audioLatency    latency.Histogram // sender's write → receiver's read, audio
	audioLatencySum atomic.Int64      // of the same, ns (for the exact mean)
	dialErrors      atomic.Uint64
	joins           atomic.Uint64 // successful joins, rejoins included
	lastError       atomic.Pointer[string]
	signaling       signalingCount
	byURL           map[string]*signalingCount // the same, by the URL participants join at
}

// Start joins the participants (spaced by JoinInterval) and starts the speech
// pattern. It returns at once; WaitJoined waits for the joins.
func Start(ctx context.Context, cfg Config) (*Run, error) {
	if cfg.URL == "" || cfg.Room == "" {
		return nil, errors.New("load: URL and room are required")
	}
	if cfg.JoinInterval == 0 {
		cfg.JoinInterval = 40 * time.Millisecond
	}
	if cfg.Speech == "" {
		cfg.Speech = SpeechRealistic
	}
	api, err := newAPI(!cfg.NoNACK, !cfg.NoFeedback, 0)
	if err != nil {
		return nil, err
	}
	r := &Run{cfg: cfg, api: api, start: time.Now(), byURL: map[string]*signalingCount{}}
	r.ctx, r.cancel = context.WithCancel(ctx)
	for i, spec := range cfg.Participants {
		p, err := newParticipant(r, spec, i)
		switch {
		case err != nil:
		case spec.Delay > 0:
			p.api, err = newAPI(!cfg.NoNACK, !cfg.NoFeedback, spec.Delay)
		case cfg.Light && p.snd == nil:
			p.light = newLightRx(p.recv, cfg.Seed+uint64(i))
			p.api, err = newLightAPI(p.light)
		}
		if err != nil {
			r.Close()
			return nil, err
		}
		r.parts = append(r.parts, p)
		u := cmp.Or(spec.URL, cfg.URL)
		if r.byURL[u] == nil {
			r.byURL[u] = new(signalingCount)
		}
		p.sig = r.byURL[u]
		if spec.Audio {
			r.speakers = append(r.speakers, p)
		}
	}
	if r.speech, err = NewSpeech(cfg.Speech, len(r.speakers), cfg.Seed); err != nil {
		r.Close()
		return nil, err
	}
	r.wg.Add(3)
	go func() { defer r.wg.Done(); r.lightFeedback() }()
	go func() {
		defer r.wg.Done()
		for i, p := range r.parts {
			if i > 0 {
				select {
				case <-r.ctx.Done():
					return
				case <-time.After(cfg.JoinInterval):
				}
			}
			r.wg.Add(1)
			go func() { defer r.wg.Done(); p.loop(r.ctx) }()
		}
	}()
	go func() { defer r.wg.Done(); r.speak() }()
	return r, nil
}

// speak applies the speech pattern every 10 ms.
func (r *Run) speak() {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		r.speech.Advance(time.Since(r.start), func(i int, on bool) { r.speakers[i].setSpeaking(on) })
		select {
		case <-r.ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// lightFeedback sends the light receivers' RTCP every 100 ms.
func (r *Run) lightFeedback() {
	var light []*lightRx
	for _, p := range r.parts {
		if p.light != nil {
			light = append(light, p.light)
		}
	}
	if len(light) == 0 {
		return
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-tick.C:
			for _, l := range light {
				l.feedback(!r.cfg.NoFeedback, !r.cfg.NoNACK)
			}
		}
	}
}

// WaitJoined waits until every participant has joined once.
func (r *Run) WaitJoined(ctx context.Context) error {
	for _, p := range r.parts {
		select {
		case <-ctx.Done():
			joined := 0
			for _, q := range r.parts {
				if q.connected.Load() {
					joined++
				}
			}
			msg := ""
			if e := r.lastError.Load(); e != nil {
				msg = " (last error: " + *e + ")"
			}
			return fmt.Errorf("%d of %d participants joined: %w%s", joined, len(r.parts), ctx.Err(), msg)
		case <-p.joined:
		}
	}
	return nil
}

// Send sends a signaling message through the first connected participant (for
// example room-settings to change the room's Last N).
func (r *Run) Send(typ string, body any) error {
	for _, p := range r.parts {
		if p.connected.Load() {
			done := make(chan error, 1)
			p.do(func(c *client.Client) { done <- c.Send(typ, body) })
			select {
			case err := <-done:
				return err
			case <-time.After(5 * time.Second):
				return errors.New("load: send timed out")
			}
		}
	}
	return errNotConnected
}

// Close leaves and stops everything; later calls do nothing.
func (r *Run) Close() {
	r.closeOnce.Do(func() {
		r.cancel()
		r.wg.Wait()
		for _, p := range r.parts {
			p.stop()
		}
	})
}

func (r *Run) register(id string, p *participant) { r.byID.Store(id, p) }

func (r *Run) unregister(id string, p *participant) { r.byID.CompareAndDelete(id, p) }

// sourceOf is the media source of the participant with this id (nil: unknown,
// or not one of ours).
func (r *Run) sourceOf(id string) *source {
	v, ok := r.byID.Load(id)
	if !ok {
		return nil
	}
	if p := v.(*participant); p.snd != nil {
		return p.snd.src
	}
	return nil
}

func (r *Run) retire(t *rxTrack) { r.retired.add(t) }

func (r *Run) noteError(err error) {
	s := err.Error()
	r.lastError.Store(&s)
}

// SignalingByURL is what the participants joining at each URL received over
// signaling.
func (r *Run) SignalingByURL() map[string]Signaling {
	out := make(map[string]Signaling, len(r.byURL))
	for u, c := range r.byURL {
		out[u] = c.snapshot()
	}
	return out
}

// LastError is the most recent join failure or error message from the server.
func (r *Run) LastError() string {
	if e := r.lastError.Load(); e != nil {
		return *e
	}
	return ""
}

// newAPI is the participants' pion API: Opus with the RFC 6464 extension, VP8
// with RTX and the simulcast extensions; on what we send, transport-wide
// sequence numbers (as browsers) and sender reports; on what we receive, as a
// browser's receive side does: receiver reports, (with nacks) NACKs and (with
// feedback) transport-wide congestion control feedback (the transport-cc RTCP
// every 100 ms that the SFU's bandwidth estimator runs on). Our own code answers
// NACKs (pion's responder is left out).
//
// delay, when positive, holds every media datagram sent and received that long
// (delayNet): the participant's one-way delay to its bridge.
func newAPI(nacks, twccFeedback bool, delay time.Duration) (*webrtc.API, error) {
	m := &webrtc.MediaEngine{}
	feedback := []webrtc.RTCPFeedback{{Type: "nack"}, {Type: "nack", Parameter: "pli"}, {Type: "ccm", Parameter: "fir"}, {Type: webrtc.TypeRTCPFBTransportCC}}
	codecs := []struct {
		c    webrtc.RTPCodecParameters
		kind webrtc.RTPCodecType
	}{
		{webrtc.RTPCodecParameters{RTPCodecCapability: webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeOpus, ClockRate: 48000, Channels: 2, SDPFmtpLine: "minptime=10;useinbandfec=1",
			RTCPFeedback: []webrtc.RTCPFeedback{{Type: webrtc.TypeRTCPFBTransportCC}}}, PayloadType: 111}, webrtc.RTPCodecTypeAudio},
		{webrtc.RTPCodecParameters{RTPCodecCapability: webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeVP8, ClockRate: videoClockRate, RTCPFeedback: feedback}, PayloadType: 96}, webrtc.RTPCodecTypeVideo},
		{webrtc.RTPCodecParameters{RTPCodecCapability: webrtc.RTPCodecCapability{MimeType: webrtc.MimeTypeRTX, ClockRate: videoClockRate, SDPFmtpLine: "apt=96"}, PayloadType: 97}, webrtc.RTPCodecTypeVideo},
	}
	for _, c := range codecs {
		if err := m.RegisterCodec(c.c, c.kind); err != nil {
			return nil, err
		}
	}
	for _, x := range []struct {
		uri  string
		kind webrtc.RTPCodecType
	}{
		{client.AudioLevelURI, webrtc.RTPCodecTypeAudio},
		{sdp.SDESMidURI, webrtc.RTPCodecTypeVideo},
		{sdp.SDESRTPStreamIDURI, webrtc.RTPCodecTypeVideo},
		{sdp.SDESRepairRTPStreamIDURI, webrtc.RTPCodecTypeVideo},
	} {
		if err := m.RegisterHeaderExtension(webrtc.RTPHeaderExtensionCapability{URI: x.uri}, x.kind); err != nil {
			return nil, err
		}
	}
	reg := &interceptor.Registry{}
	if nacks {
		gen, err := nack.NewGeneratorInterceptor()
		if err != nil {
			return nil, err
		}
		reg.Add(gen)
	}
	rr, err := report.NewReceiverInterceptor()
	if err != nil {
		return nil, err
	}
	reg.Add(rr)
	sr, err := report.NewSenderInterceptor()
	if err != nil {
		return nil, err
	}
	reg.Add(sr)
	if err := webrtc.ConfigureTWCCHeaderExtensionSender(m, reg); err != nil {
		return nil, err
	}
	if twccFeedback {
		// The transport-cc extension and feedback are registered above, for
		// both directions; this generates the feedback for what we receive.
		// Its one error is a write after the connection closed (a leave).
		quiet := &logging.DefaultLoggerFactory{Writer: io.Discard, DefaultLogLevel: logging.LogLevelDisabled}
		gen, err := twcc.NewSenderInterceptor(twcc.SendInterval(100*time.Millisecond), twcc.WithLoggerFactory(quiet))
		if err != nil {
			return nil, err
		}
		reg.Add(gen)
	}
	var s webrtc.SettingEngine
	s.SetIncludeLoopbackCandidate(true)
	s.SetNetworkTypes([]webrtc.NetworkType{webrtc.NetworkTypeUDP4})
	if delay > 0 {
		n, err := newDelayNet(delay)
		if err != nil {
			return nil, err
		}
		s.SetNet(n)
	}
	return webrtc.NewAPI(webrtc.WithMediaEngine(m), webrtc.WithInterceptorRegistry(reg), webrtc.WithSettingEngine(s)), nil
}
